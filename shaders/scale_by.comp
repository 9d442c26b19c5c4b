#version 450
// scale_by multiplies n values by the scaler's current scale (state[0]),
// producing the scaled loss. Values are fp32 words or fp16 pairs (spec
// constant 1), in and out of the same dtype; each invocation owns a word.
#include "common.glsl"
#include "fp16.glsl"

layout(constant_id = 1) const uint F16 = 0;
layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) readonly buffer State { uint state[]; };
layout(set = 0, binding = 2) writeonly buffer Dst { uint dst[]; };

void main() {
    float s = uintBitsToFloat(state[0]);
    if (F16 == 0u) {
        GRID_STRIDE(i, p.n) { dst[i] = floatBitsToUint(uintBitsToFloat(src[i]) * s); }
    } else {
        GRID_STRIDE(w, (p.n + 1u) / 2u) {
            uint x = src[w];
            uint lo = f32_to_f16(f16_to_f32(x & 0xFFFFu) * s);
            uint hi = 2u * w + 1u < p.n ? f32_to_f16(f16_to_f32(x >> 16) * s) : 0u;
            dst[w] = lo | (hi << 16);
        }
    }
}
