#version 450
// tiers: packed storage16
// cast_f32_f16 converts n fp32 values to fp16, rounding to nearest even with
// vkamp's integer conversion.
#include "common.glsl"
#include "fp16.glsl"

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };

#if defined(TIER_PACKED)
// Two halves per word: each invocation writes whole words, so no two
// invocations share one. An odd count pads the last word's high half with 0.
layout(set = 0, binding = 1) writeonly buffer Dst { uint dst[]; };
void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        uint i = 2u * w;
        uint hi = 0u;
        if (i + 1u < p.n) hi = f32_to_f16_flat(src[i + 1u]);
        dst[w] = f32_to_f16_flat(src[i]) | (hi << 16);
    }
}
#else
layout(set = 0, binding = 1) writeonly buffer Dst { uint16_t dst[]; };
void main() {
    GRID_STRIDE(i, p.n) { dst[i] = uint16_t(f32_to_f16_flat(src[i])); }
}
#endif
