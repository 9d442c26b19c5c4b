#version 450
// tiers: packed storage16
// copy16 copies n 16-bit values.
#include "common.glsl"

layout(push_constant) uniform Push { uint n; } p;

#if defined(TIER_PACKED)
// Whole words: an odd count also copies the last word's padding half.
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { uint dst[]; };
void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) { dst[w] = src[w]; }
}
#else
layout(set = 0, binding = 0) readonly buffer Src { uint16_t src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { uint16_t dst[]; };
void main() {
    GRID_STRIDE(i, p.n) { dst[i] = src[i]; }
}
#endif
