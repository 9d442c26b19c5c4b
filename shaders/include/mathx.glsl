// Elementary functions with PyTorch's special values and vkamp's own
// accuracy. GLSL leaves log and sqrt undefined for negative inputs and
// zero, and allows log an absolute error of 2^-21 near 1 (relative error
// without bound as log(x) nears 0); drivers differ on NaN and inf. These
// give the same specials on every driver; on the deterministic path
// (det.glsl) the same bits too, subnormal inputs taken as zero.
#ifndef VKAMP_MATHX_GLSL
#define VKAMP_MATHX_GLSL

#include "dtype.glsl"
#include "det.glsl"

#define X_NAN uintBitsToFloat(0x7FC00000u)
#define X_INF uintBitsToFloat(0x7F800000u)

// signed_inf is +inf or -inf with the sign of s (which may be ±0).
float signed_inf(float s) { return uintBitsToFloat((floatBitsToUint(s) & 0x80000000u) | 0x7F800000u); }

// log_pos is ln(x) for a finite x > 0: x = m 2^e with m in [sqrt(1/2),
// sqrt(2)), ln(m) = 2 atanh(s), s = (m-1)/(m+1) and |s| < 0.172, by its odd
// series to s^13 (truncation under 1e-10), plus e ln 2 in two parts. m - 1
// is exact; the error is a few fp32 roundings, relative to the result.
float log_pos(float x) {
    uint u = floatBitsToUint(x);
    int e = 0;
    if (u < 0x00800000u) { // subnormal: scale into the normal range
        x *= 16777216.0;   // 2^24
        u = floatBitsToUint(x);
        e = -24;
    }
    e += int(u >> 23) - 127;
    float m = uintBitsToFloat((u & 0x007FFFFFu) | 0x3F800000u); // [1, 2)
    if (m > 1.41421356) {
        m *= 0.5;
        e += 1;
    }
    float s = (m - 1.0) / (m + 1.0);
    float z = s * s;
    float t = z * (1.0 / 3.0 + z * (1.0 / 5.0 + z * (1.0 / 7.0 + z * (1.0 / 9.0 + z * (1.0 / 11.0 + z * (1.0 / 13.0))))));
    float fe = float(e);
    // ln 2 = LN2_HI + LN2_LO, LN2_HI with few bits so fe * LN2_HI is exact.
    const float LN2_HI = 0.693145752; // 0x3F317200
    const float LN2_LO = 1.42860677e-06;
    float lm = 2.0 * s + 2.0 * s * t; // ln(m)
    return fe * LN2_HI + (lm + fe * LN2_LO);
}

// log_x is ln(x) as PyTorch: NaN for NaN and x < 0, -inf for ±0, inf for inf.
float log_x(float x) {
    if (DETERMINISTIC) return det_log(x);
    if (is_nan(x)) return x;
    if (x < 0.0) return X_NAN;
    if (x == 0.0) return -X_INF;
    if (is_inf(x)) return x;
    return log_pos(x);
}

// sqrt_x is sqrt(x): NaN for x < 0, ±0 and inf themselves. One Newton step
// after the driver's sqrt (which GLSL lets be a few ulp off).
float sqrt_x(float x) {
    if (DETERMINISTIC) return det_sqrt(x);
    if (is_nan(x) || x == 0.0 || is_inf(x)) return x < 0.0 ? X_NAN : x;
    if (x < 0.0) return X_NAN;
    float y = sqrt(x);
    return 0.5 * (y + x / y);
}

// rsqrt_x is 1/sqrt(x): ±inf for ±0, 0 for inf, NaN for x < 0.
float rsqrt_x(float x) {
    if (DETERMINISTIC) return det_rsqrt(x);
    if (is_nan(x)) return x;
    if (x == 0.0) return signed_inf(x);
    if (x < 0.0) return X_NAN;
    if (is_inf(x)) return 0.0;
    return 1.0 / sqrt_x(x);
}

// tanh_x is tanh(x): Cephes' tanhf, an odd polynomial below 0.625 (no
// cancellation near 0) and 1 - 2/(e^2|x| + 1) above, 1 past 9 (where GLSL
// tanh may be inf/inf). ±0 stay ±0, ±inf give ±1, NaN stays NaN.
float tanh_x(float x) {
    if (DETERMINISTIC) return det_tanh(x);
    if (is_nan(x) || x == 0.0) return x; // -0 + (-0)(+0)(p) would be +0
    float a = abs(x);
    if (a < 0.625) {
        float z = x * x;
        return x + x * z * ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z +
                              1.33314422036e-1) * z - 3.33332819422e-1);
    }
    float r = a > 9.0 ? 1.0 : 1.0 - 2.0 / (exp(2.0 * a) + 1.0);
    return x < 0.0 ? -r : r;
}

// sigmoid_x is 1/(1 + e^-x), through e^x/(1 + e^x) for x < 0 so that exp
// never overflows into 0/inf; NaN stays NaN (SwiftShader's exp(NaN) is inf).
float sigmoid_x(float x) {
    if (DETERMINISTIC) return det_sigmoid(x);
    if (is_nan(x)) return x;
    if (x >= 0.0) return 1.0 / (1.0 + exp(-x));
    float e = exp(x);
    return e / (1.0 + e);
}

// odd_int reports whether the finite p is an odd integer.
bool odd_int(float p) { return abs(p) < 16777216.0 && floor(p) == p && mod(p, 2.0) == 1.0; }

// pow_x is x^p as PyTorch's pow(tensor, scalar): exponents 2, 3, -1, -2
// by products, 0.5 and -0.5 by sqrt and rsqrt (so pow(-inf, 0.5) is NaN
// and pow(-0, -0.5) is -inf, unlike C's pow), others as C's pow: x^0 = 1
// and 1^p = 1 even for NaN, a negative x needs an integer p, and ±0 and
// ±inf follow C99 Annex F.
float pow_x(float x, float p) {
    if (DETERMINISTIC) return det_pow(x, p);
    if (p == 2.0) return x * x;
    if (p == 3.0) return x * x * x;
    if (p == 0.5) return sqrt_x(x);
    if (p == -0.5) return rsqrt_x(x);
    if (p == -1.0) return 1.0 / x;
    if (p == -2.0) return 1.0 / (x * x);
    if (p == 0.0 || x == 1.0) return 1.0;
    if (is_nan(x) || is_nan(p)) return X_NAN;
    float a = abs(x);
    if (is_inf(p)) {
        if (a == 1.0) return 1.0;
        return (a < 1.0) == (p > 0.0) ? 0.0 : X_INF;
    }
    bool odd = odd_int(p);
    float r;
    if (a == 0.0) r = p > 0.0 ? 0.0 : X_INF;
    else if (is_inf(a)) r = p > 0.0 ? X_INF : 0.0;
    else if (x < 0.0 && floor(p) != p) return X_NAN;
    else r = exp(p * log_pos(a));
    // A negative base (or -0) with an odd integer p keeps its sign.
    return odd && (floatBitsToUint(x) & 0x80000000u) != 0u ? -r : r;
}

#endif
