#version 450
// copy32 copies n 32-bit words.
#include "common.glsl"

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { uint dst[]; };

void main() {
    GRID_STRIDE(i, p.n) { dst[i] = src[i]; }
}
