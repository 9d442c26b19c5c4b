#version 450
// layer_norm_backward_tex is layer_norm_backward's form for CPU drivers,
// for rows of a multiple of 4 values: one invocation per row (its SEG 1,
// with the same arithmetic in the same order), dy, x and gamma read as
// uniform texel buffers, dx and dy * xhat stored as vec4s (see
// layer_norm_tex).
#include "common.glsl"

layout(push_constant) uniform Push { uint rows; uint cols; } p;
layout(set = 0, binding = 0) uniform usamplerBuffer dy;
layout(set = 0, binding = 1) uniform usamplerBuffer x;
layout(set = 0, binding = 2) uniform usamplerBuffer g;
layout(set = 0, binding = 3) readonly buffer Stats { vec2 stats[]; };
layout(set = 0, binding = 4) writeonly buffer DX { vec4 dx[]; };
layout(set = 0, binding = 5) writeonly buffer DYX { vec4 dyx[]; };

vec4 at(usamplerBuffer t, uint i) { return uintBitsToFloat(texelFetch(t, int(i))); }

void main() {
    uint c4 = p.cols / 4u;
    GRID_STRIDE(r, p.rows) {
        uint lo = r * c4;
        vec2 st = stats[r];
        float sg = 0.0, sgx = 0.0;
        for (uint i = 0u; i < c4; i++) {
            vec4 d = at(dy, lo + i);
            vec4 xhat = (at(x, lo + i) - st.x) * st.y;
            vec4 gg = d * at(g, i);
            sg += gg.x; sgx += gg.x * xhat.x;
            sg += gg.y; sgx += gg.y * xhat.y;
            sg += gg.z; sgx += gg.z * xhat.z;
            sg += gg.w; sgx += gg.w * xhat.w;
            dyx[lo + i] = d * xhat;
        }
        float mg = sg / float(p.cols);
        float mgx = sgx / float(p.cols);
        for (uint i = 0u; i < c4; i++) {
            vec4 xhat = (at(x, lo + i) - st.x) * st.y;
            dx[lo + i] = st.y * (at(dy, lo + i) * at(g, i) - mg - xhat * mgx);
        }
    }
}
