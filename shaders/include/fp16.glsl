// fp16 <-> fp32 conversion in integer arithmetic (with fp32 additions that
// are exact, or round to nearest even as a CPU's do, in the texel forms),
// owned by vkamp and identical on every driver: GLSL packHalf2x16 is wrong
// on SwiftShader and drivers differ in rounding mode, so no kernel may let
// the driver round to fp16.
// The results match github.com/x448/float16 bit for bit (IEEE 754 binary16,
// round to nearest even; NaN keeps its top payload bits and is quieted).
#ifndef VKAMP_FP16_GLSL
#define VKAMP_FP16_GLSL

// f32_to_f16 returns the binary16 bits of f in the low 16 bits.
uint f32_to_f16(float f) {
    uint x = floatBitsToUint(f);
    uint s = (x >> 16) & 0x8000u;
    uint a = x & 0x7FFFFFFFu;
    if (a >= 0x7F800000u) { // inf or NaN
        uint nan = a > 0x7F800000u ? 0x0200u : 0u;
        return s | 0x7C00u | nan | ((a & 0x7FFFFFu) >> 13);
    }
    if (a >= 0x477FF000u) return s | 0x7C00u; // rounds to >= 65520: inf
    if (a >= 0x38800000u) {                   // normal half
        uint r = a - 0x38000000u;             // rebias exponent 127 -> 15
        r += 0x0FFFu + ((r >> 13) & 1u);      // round to nearest even
        return s | (r >> 13);
    }
    if (a <= 0x33000000u) return s;           // <= 2^-25: ties to even give zero
    uint e = a >> 23;
    uint m = (a & 0x7FFFFFu) | 0x800000u;
    uint sh = 126u - e;                       // 14..24
    uint q = m >> sh;
    uint rem = m & ((1u << sh) - 1u);
    uint half_ = 1u << (sh - 1u);
    if (rem > half_ || (rem == half_ && (q & 1u) != 0u)) q++;
    return s | q;                             // a carry gives the smallest normal
}

// f16_to_f32 decodes the binary16 bits in the low 16 bits of h. It is exact
// for every number; a signalling NaN comes out quiet, as IEEE 754 says.
float f16_to_f32(uint h) {
    uint s = (h & 0x8000u) << 16;
    uint e = (h >> 10) & 31u;
    uint m = h & 0x3FFu;
    if (e == 0u) { // zero or subnormal: m * 2^-24 is exact in fp32
        return uintBitsToFloat(floatBitsToUint(float(m) * 5.9604644775390625e-8) | s);
    }
    if (e == 31u) { // inf, or NaN made quiet with its payload kept
        return uintBitsToFloat(s | 0x7F800000u | (m != 0u ? 0x400000u : 0u) | (m << 13));
    }
    return uintBitsToFloat(s | ((e + 112u) << 23) | (m << 13));
}

// f16_to_f32_flat and f32_to_f16_flat are the conversions above, bit for
// bit, without branches: lavapipe runs every side of a branch anyway, and
// pays for the masking.

// f16_to_f32_flat moves the exponent and mantissa bits into place and
// rebiases the exponent (15 -> 127). A subnormal half takes 2^-14's
// exponent instead, with its mantissa after the binary point, and 2^-14
// subtracted: m * 2^-24, exact, and normal, as the operands are, so that
// drivers that flush subnormals get it right. inf and NaN take inf's
// exponent. Fewer operations than building each case: with
// f32_to_f16_cpu, lavapipe's stream/add-f16 (tools/bench, 2 cores) went
// from 13.8 to 16.4 GB/s.
float f16_to_f32_flat(uint h) {
    uint a = (h & 0x7FFFu) << 13;
    uint v = a + 0x38000000u;
    v = a < 0x00800000u ? floatBitsToUint(uintBitsToFloat(v + 0x00800000u) - 6.103515625e-05) : v;
    v = a >= 0x0F800000u ? a | 0x7F800000u | (a > 0x0F800000u ? 0x400000u : 0u) : v;
    return uintBitsToFloat(v | ((h & 0x8000u) << 16));
}

// f32_to_f16_flat rounds both kinds of half by one formula: a normal one
// rebiases the exponent (127 -> 15) and drops 13 bits, a subnormal one drops
// 126 - e bits of the mantissa with its implicit bit (31 at most, which
// leaves 0 for every smaller number, zero included, and its carry is the
// smallest normal's bits); past 65504 rounds to inf and inf stays inf under
// the min, so only NaN needs a case of its own. A third fewer operations
// than a select among f32_to_f16's cases, every one of which lavapipe runs.
uint f32_to_f16_flat(float f) {
    uint x = floatBitsToUint(f);
    uint a = x & 0x7FFFFFFFu;
    bool norm = a >= 0x38800000u;
    uint v = norm ? a - 0x38000000u : (a & 0x7FFFFFu) | 0x800000u;
    uint sh = norm ? 13u : min(126u - (a >> 23), 31u);
    uint r = min((v + ((1u << (sh - 1u)) - 1u) + ((v >> sh) & 1u)) >> sh, 0x7C00u); // round to nearest even
    r = a > 0x7F800000u ? 0x7E00u | ((a & 0x7FFFFFu) >> 13) : r;                 // NaN, quiet, top payload kept
    return ((x >> 16) & 0x8000u) | r;
}

// f32_to_f16_cpu is f32_to_f16_flat, bit for bit, where fp32 addition
// rounds to nearest even, as it does on a CPU (the texel forms' drivers):
// it rounds by integer arithmetic where the half is normal
// (rebias the exponent 127 -> 15, round off 13 bits to nearest even; past
// 65504 the carry reaches inf's bits) and by the FPU's own rounding where it
// is subnormal: a + 0.5, whose ulp is 2^-24, the subnormal half's, leaves
// the half's bits in its mantissa, and a rounding up to 2^-14 gives the
// smallest normal's. That add's result is normal, so flushing subnormals
// (results or operands) changes nothing: an fp32 subnormal rounds to zero
// either way. NaN alone needs a case of its own.
// lavapipe's stream/cast-f32-f16 (tools/bench, 2 cores): 25.3 to 29.9 GB/s.
uint f32_to_f16_cpu(float f) {
    uint x = floatBitsToUint(f);
    uint a = x & 0x7FFFFFFFu;
    uint sub_ = floatBitsToUint(uintBitsToFloat(a) + 0.5) - 0x3F000000u;
    uint norm = (a + 0xC8000FFFu + ((a >> 13) & 1u)) >> 13; // -112 << 23: exponent 127 -> 15
    uint r = a < 0x38800000u ? sub_ : min(norm, 0x7C00u);
    r = a > 0x7F800000u ? 0x7E00u | ((a & 0x7FFFFFu) >> 13) : r; // NaN, quiet, top payload kept
    return ((x >> 16) & 0x8000u) | r;
}

#endif
