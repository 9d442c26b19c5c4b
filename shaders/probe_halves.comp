#version 450
// probe_halves decodes every fp16 value with the driver's unpackHalf2x16, as
// the texel forms would with DRIVER_HALVES (texels.glsl): out[2h] from the
// low half of a word, out[2h + 1] from the high half, the fp32 bits. The
// device compares them with the exact values before it lets those forms use
// the driver's decode (tensor/internal/kernels.driverHalves).
#include "common.glsl"

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) writeonly buffer Out { uint o[]; };

void main() {
    GRID_STRIDE(h, p.n) {
        vec2 v = unpackHalf2x16(h | (h << 16));
        o[2u * h] = floatBitsToUint(v.x);
        o[2u * h + 1u] = floatBitsToUint(v.y);
    }
}
