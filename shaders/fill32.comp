#version 450
// fill32 sets n 32-bit words to one bit pattern (fp32 values or raw words).
#include "common.glsl"

layout(push_constant) uniform Push { uint n; uint value; } p;
layout(set = 0, binding = 0) writeonly buffer Dst { uint dst[]; };

void main() {
    GRID_STRIDE(i, p.n) { dst[i] = p.value; }
}
