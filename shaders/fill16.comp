#version 450
// tiers: packed storage16
// fill16 sets n 16-bit values (fp16 bits in the low half of value).
#include "common.glsl"

layout(push_constant) uniform Push { uint n; uint value; } p;

#if defined(TIER_PACKED)
// Whole words, so an odd count also sets the last word's padding half.
layout(set = 0, binding = 0) writeonly buffer Dst { uint dst[]; };
void main() {
    uint v = p.value & 0xFFFFu;
    GRID_STRIDE(w, (p.n + 1u) / 2u) { dst[w] = v | (v << 16); }
}
#else
layout(set = 0, binding = 0) writeonly buffer Dst { uint16_t dst[]; };
void main() {
    GRID_STRIDE(i, p.n) { dst[i] = uint16_t(p.value & 0xFFFFu); }
}
#endif
