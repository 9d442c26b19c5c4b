#version 450
// accumulate adds a gradient into an fp32 one in place: dst += src, src in
// of dtype IN0_DT. Autograd accumulates parameter gradients so.
#include "ewise.glsl"
#include "det_extra.glsl" // xadd: subnormals flushed in deterministic mode

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) buffer Dst { uint dst[]; };

DEFINE_LOADS(src, src, IN0_DT)

// An fp32 src is added four elements at a time, as binary.glsl does.
layout(set = 0, binding = 0) readonly buffer Src4 { vec4 src4[]; };
layout(set = 0, binding = 1) buffer Dst4 { vec4 dst4[]; };

void main() {
    if (IN0_DT == DT_F32) {
        F32_QUADS(p.n, q) {
            vec4 s = src4[q], d = dst4[q];
            dst4[q] = vec4(xadd(d.x, s.x), xadd(d.y, s.y), xadd(d.z, s.z), xadd(d.w, s.w));
        }
        F32_TAIL(p.n, i) dst[i] = floatBitsToUint(xadd(uintBitsToFloat(dst[i]), src_at(i)));
        return;
    }
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        vec2 s = src_pair(w, p.n);
        dst[2u * w] = floatBitsToUint(xadd(uintBitsToFloat(dst[2u * w]), s.x));
        if (2u * w + 1u < p.n) dst[2u * w + 1u] = floatBitsToUint(xadd(uintBitsToFloat(dst[2u * w + 1u]), s.y));
    }
}
