#version 450
// copy32_tex is copy32's texel form for CPU drivers (texels.glsl): a texel
// of 4 words per invocation, the last n%4 words stored one by one.
#include "common.glsl"

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) uniform usamplerBuffer src;
layout(set = 0, binding = 1) writeonly buffer Dst { uvec4 dst[]; };

void main() {
    uint full = p.n / 4u;
    GRID_STRIDE(q, full) dst[q] = texelFetch(src, int(q));
    if (gl_GlobalInvocationID.x == 0u && 4u * full < p.n) {
        uvec4 x = texelFetch(src, int(full));
        for (uint j = 0u; 4u * full + j < p.n; j++) dst[full][j] = x[j];
    }
}
