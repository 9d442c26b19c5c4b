// Element types as codes, the same numbers as tensor.DType's kernel codes
// (the generator turns these defines into Go constants). Every buffer that
// can hold several dtypes is declared as 32-bit words: a 32-bit element is a
// word, a 16-bit element half of word i>>1 (low half first), so one SPIR-V
// serves every tier. Conversions are integer code, identical on every
// driver: the driver's own rounding cannot be trusted.
#ifndef VKAMP_DTYPE_GLSL
#define VKAMP_DTYPE_GLSL

#include "fp16.glsl"

#define DT_F32 0u  // IEEE 754 binary32
#define DT_F16 1u  // IEEE 754 binary16
#define DT_BF16 2u // bfloat16: the top half of a binary32
#define DT_I32 3u  // two's complement 32-bit integer

// is_nan tests the bits: drivers may fold a float self-comparison away.
bool is_nan(float x) { return (floatBitsToUint(x) & 0x7FFFFFFFu) > 0x7F800000u; }
bool is_inf(float x) { return (floatBitsToUint(x) & 0x7FFFFFFFu) == 0x7F800000u; }

// dt_wide reports whether elements of dt fill a whole word.
bool dt_wide(uint dt) { return dt == DT_F32 || dt == DT_I32; }

// half_inf is the bits of 16-bit dtype dt's infinity, half_quiet the quiet
// bit of its NaNs.
uint half_inf(uint dt) { return dt == DT_BF16 ? 0x7F80u : 0x7C00u; }
uint half_quiet(uint dt) { return dt == DT_BF16 ? 0x0040u : 0x0200u; }

// half_nan reports whether 16-bit element h of dtype dt is a NaN;
// half_quieted is h with a NaN made quiet, as decoding makes it.
bool half_nan(uint h, uint dt) { return (h & 0x7FFFu) > half_inf(dt); }
uint half_quieted(uint h, uint dt) { return half_nan(h, dt) ? h | half_quiet(dt) : h; }

// f32_to_bf16 returns the bfloat16 bits of f in the low 16 bits, rounded to
// nearest even; NaN keeps its sign and top payload bits and is quieted.
uint f32_to_bf16(float f) {
    uint x = floatBitsToUint(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return (x >> 16) | 0x0040u;
    return (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16; // overflow carries into inf
}

// bf16_to_f32 widens the bfloat16 bits in the low 16 bits of h: exact.
float bf16_to_f32(uint h) { return uintBitsToFloat((h & 0xFFFFu) << 16); }

// f32_to_i32 truncates toward zero, saturating at the int32 range, with NaN
// giving 0: GLSL leaves those cases undefined, so drivers would differ.
uint f32_to_i32(float f) {
    if (is_nan(f)) return 0u;
    if (f >= 2147483648.0) return 0x7FFFFFFFu;
    if (f <= -2147483648.0) return 0x80000000u;
    return uint(int(f));
}

// half_to_f32 decodes a 16-bit element of dtype dt.
float half_to_f32(uint h, uint dt) { return dt == DT_BF16 ? bf16_to_f32(h) : f16_to_f32(h); }

// f32_to_half encodes f as a 16-bit element of dtype dt.
uint f32_to_half(float f, uint dt) { return dt == DT_BF16 ? f32_to_bf16(f) : f32_to_f16(f); }

// half_to_f32_flat and f32_to_half_flat are half_to_f32 and f32_to_half
// with the flat fp16 conversions.
float half_to_f32_flat(uint h, uint dt) { return dt == DT_BF16 ? bf16_to_f32(h) : f16_to_f32_flat(h); }
uint f32_to_half_flat(float f, uint dt) { return dt == DT_BF16 ? f32_to_bf16(f) : f32_to_f16_flat(f); }

// word_to_f32 decodes a 32-bit element of dtype dt.
float word_to_f32(uint w, uint dt) { return dt == DT_I32 ? float(int(w)) : uintBitsToFloat(w); }

// f32_to_word encodes f as a 32-bit element of dtype dt.
uint f32_to_word(float f, uint dt) { return dt == DT_I32 ? f32_to_i32(f) : floatBitsToUint(f); }

#endif
