#version 450
// scale_by multiplies n values by the scaler's current scale (state[0]),
// producing the scaled loss, in the dtypes IN0_DT and OUT_DT.
// Deterministic mode: subnormal inputs and products flushed (det.glsl).
#include "ewise.glsl"
#include "det.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) readonly buffer State { uint state[]; };
layout(set = 0, binding = 2) writeonly buffer Dst { uint dst[]; };

DEFINE_LOADS(src, src, IN0_DT)
DEFINE_STORE(dst, dst, OUT_DT)

void main() {
    float s = uintBitsToFloat(state[0]);
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        vec2 v = src_pair(w, p.n);
        dst_pair(w, p.n, DETERMINISTIC ? vec2(det_mul(v.x, s), det_mul(v.y, s)) : v * s);
    }
}
