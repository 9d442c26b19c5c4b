#version 450
// cast converts n elements between any two dtypes (codes IN0_DT and OUT_DT)
// for the pairs that have no tuned kernel (cast_f32_f16, cast_f16_f32,
// copy16 and copy32 serve the others). Elements travel as fp32 bit
// patterns, never through driver conversions:
//   - to bf16 and fp16: vkamp's round to nearest even (dtype.glsl), NaN kept
//     quiet with its sign;
//   - bf16 to fp32: exact, a shift;
//   - to int32: truncation toward zero, saturating, NaN giving 0;
//   - from int32: round to nearest even, in integer code. For a 16-bit
//     output the int is first rounded to 24 bits to odd, which the second
//     rounding cannot turn into a double-rounding error.
// Each invocation makes two consecutive elements, so a 16-bit output word
// has one writer.
#include "common.glsl"
#include "dtype.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) readonly buffer Src { uint src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { uint dst[]; };

// i32_to_f32_bits returns the fp32 bits of the int32 in w: exact below 2^24
// in magnitude, else rounded to 24 bits, to nearest even or, if odd, to odd.
uint i32_to_f32_bits(uint w, bool odd) {
    uint s = w & 0x80000000u;
    uint a = s != 0u ? ~w + 1u : w; // 0x80000000 stays itself: 2^31
    if (a == 0u) return 0u;
    uint msb = uint(findMSB(a));
    uint q;
    if (msb <= 23u) {
        q = a << (23u - msb);
    } else {
        uint sh = msb - 23u; // 1..8
        q = a >> sh;
        uint rem = a & ((1u << sh) - 1u);
        uint half_ = 1u << (sh - 1u);
        if (odd) {
            q |= rem != 0u ? 1u : 0u;
        } else if (rem > half_ || (rem == half_ && (q & 1u) != 0u)) {
            q++; // a carry to 2^24 moves into the exponent below
        }
    }
    return s | (((msb + 126u) << 23) + q); // q holds the implicit bit
}

// load returns element i as fp32 bits.
uint load(uint i) {
    if (IN0_DT == DT_F16) return floatBitsToUint(f16_to_f32((src[i >> 1] >> ((i & 1u) * 16u)) & 0xFFFFu));
    if (IN0_DT == DT_BF16) return ((src[i >> 1] >> ((i & 1u) * 16u)) & 0xFFFFu) << 16;
    if (IN0_DT == DT_I32) return i32_to_f32_bits(src[i], !dt_wide(OUT_DT));
    return src[i];
}

// store16 encodes fp32 bits as a 16-bit element of OUT_DT.
uint store16(uint x) { return f32_to_half(uintBitsToFloat(x), OUT_DT); }

// store32 encodes fp32 bits as a 32-bit element of OUT_DT.
uint store32(uint x) { return OUT_DT == DT_I32 ? f32_to_i32(uintBitsToFloat(x)) : x; }

void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        uint i = 2u * w;
        bool two = i + 1u < p.n;
        if (dt_wide(OUT_DT)) {
            dst[i] = store32(load(i));
            if (two) dst[i + 1u] = store32(load(i + 1u));
        } else {
            uint hi = two ? store16(load(i + 1u)) : 0u;
            dst[w] = store16(load(i)) | (hi << 16);
        }
    }
}
