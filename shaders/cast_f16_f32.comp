#version 450
// tiers: packed storage16
// cast_f16_f32 converts n fp16 values to fp32 exactly. The integer decode is
// used in every tier: a native conversion may flush subnormals.
#include "common.glsl"
#include "fp16.glsl"

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 1) writeonly buffer Dst { float dst[]; };

#if defined(TIER_PACKED)
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
#define HALF_BITS(i) ((src[(i) >> 1] >> (((i) & 1u) * 16u)) & 0xFFFFu)
#else
layout(set = 0, binding = 0) readonly buffer Src { uint16_t src[]; };
#define HALF_BITS(i) uint(src[i])
#endif

void main() {
    GRID_STRIDE(i, p.n) { dst[i] = f16_to_f32_flat(HALF_BITS(i)); }
}
