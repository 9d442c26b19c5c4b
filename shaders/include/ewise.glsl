// Shared code for elementwise kernels and reductions. Every buffer is
// declared as 32-bit words so one SPIR-V serves every tier and dtype: an fp32
// element is one word, an fp16 element half of word i>>1 (low half first).
// Dtypes are specialization constants (1 = fp16), folded by the driver.
#ifndef VKAMP_EWISE_GLSL
#define VKAMP_EWISE_GLSL

#include "common.glsl"
#include "fp16.glsl"

layout(constant_id = 1) const uint IN0_F16 = 0u;
layout(constant_id = 2) const uint IN1_F16 = 0u;
layout(constant_id = 3) const uint OUT_F16 = 0u;

// is_nan tests the bits: drivers may fold a float self-comparison away.
bool is_nan(float x) { return (floatBitsToUint(x) & 0x7FFFFFFFu) > 0x7F800000u; }
bool is_inf(float x) { return (floatBitsToUint(x) & 0x7FFFFFFFu) == 0x7F800000u; }

// nan_max is max that propagates NaN, as IEEE maximum does; GLSL max may not.
float nan_max(float a, float b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return b > a ? b : a;
}

vec2 unpack_f16x2(uint w) { return vec2(f16_to_f32(w & 0xFFFFu), f16_to_f32(w >> 16)); }

// DEFINE_LOADS(NAME, BUF, F16) defines NAME_at(i), element i as fp32, and
// NAME_pair(w, n), elements 2w and 2w+1 (0 past n). Branches, not ternaries,
// keep every word read within the buffer.
#define DEFINE_LOADS(NAME, BUF, F16)                                          \
    float NAME##_at(uint i) {                                                 \
        if (F16 != 0u) return f16_to_f32((BUF[i >> 1] >> ((i & 1u) * 16u)) & 0xFFFFu); \
        return uintBitsToFloat(BUF[i]);                                       \
    }                                                                         \
    vec2 NAME##_pair(uint w, uint n) {                                        \
        if (F16 != 0u) return unpack_f16x2(BUF[w]);                           \
        vec2 v = vec2(uintBitsToFloat(BUF[2u * w]), 0.0);                     \
        if (2u * w + 1u < n) v.y = uintBitsToFloat(BUF[2u * w + 1u]);         \
        return v;                                                             \
    }

// DEFINE_STORE(NAME, BUF, F16) defines NAME_pair(w, n, v), storing elements
// 2w and 2w+1. An fp16 word is written whole by one invocation, so there are
// no races; the padding half past an odd n is zeroed.
#define DEFINE_STORE(NAME, BUF, F16)                                          \
    void NAME##_pair(uint w, uint n, vec2 v) {                                \
        if (F16 != 0u) {                                                      \
            uint hi = 2u * w + 1u < n ? f32_to_f16(v.y) : 0u;                 \
            BUF[w] = f32_to_f16(v.x) | (hi << 16);                            \
            return;                                                           \
        }                                                                     \
        BUF[2u * w] = floatBitsToUint(v.x);                                   \
        if (2u * w + 1u < n) BUF[2u * w + 1u] = floatBitsToUint(v.y);        \
    }

#endif
