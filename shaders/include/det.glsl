// Deterministic arithmetic: the same bits on every driver. A kernel that
// includes this file declares the specialization constant DETERMINISTIC
// (id 31), which the runtime sets on a device opened with
// vk.Options.Deterministic (VKAMP_DETERMINISTIC=1), and takes the det_*
// functions on that path.
//
// What drivers may do differently, and what these functions do instead:
//   - contract a * b + c into an fma (lavapipe does, SwiftShader does not):
//     every result here is `precise` (SPIR-V NoContraction), so each add and
//     multiply rounds once, correctly, as Vulkan requires of OpFAdd/OpFMul;
//   - division, sqrt, exp and log are not correctly rounded in Vulkan (2.5
//     ulp, "inherited", 3 + 2|x| ulp...): division and sqrt here are integer
//     code, correctly rounded; exp and log are range reductions and
//     polynomials of correctly rounded adds and multiplies;
//   - SwiftShader flushes subnormal results to zero, lavapipe keeps them:
//     det_ftz flushes explicitly (sign kept) where a subnormal can arise, and
//     the integer code treats subnormal inputs as zero and flushes subnormal
//     results.
#ifndef VKAMP_DET_GLSL
#define VKAMP_DET_GLSL

layout(constant_id = 31) const bool DETERMINISTIC = false;

#define DET_NAN uintBitsToFloat(0x7FC00000u)
#define DET_INF uintBitsToFloat(0x7F800000u)

// det_ftz is x, or zero of x's sign when x is subnormal. Integer code
// without a select on x: with one, SwiftShader's compile time doubled with
// each det_ftz in a dependent chain (nine det_mads took minutes and GBs).
// Kernels compiled without spirv-opt (`// spirv-opt: off`, the attention
// kernels) get DET_FTZ_SELECT from shaders/internal/gen: unoptimized, it
// is the integer form SwiftShader's compiler runs out of memory on (over
// 12 GB for attention_fwd), and the select it compiles in seconds. Both
// give the same bits.
float det_ftz(float x) {
    uint u = floatBitsToUint(x);
#ifdef DET_FTZ_SELECT
    return (u & 0x7F800000u) == 0u ? uintBitsToFloat(u & 0x80000000u) : x;
#else
    uint normal = min((u >> 23) & 255u, 1u); // 0 for zero and subnormals
    return uintBitsToFloat(u & (0x80000000u | (0x7FFFFFFFu * normal)));
#endif
}

// det_prod is a * b for a and b already flushed, rounded once, the result
// flushed as x86 does (tininess after rounding): a driver that keeps
// subnormals rounds a product just below 2^-126 up to 2^-126 where x86
// flushes it, so a product of at most 2^-126 is recomputed scaled by 2^64
// (exact when both factors are nonzero: both are then normal and below 2)
// and gives 2^-126 only if that lies at or above 2^-62 (and is finite: a
// zero times a large factor gives NaN there). Integer code, no
// select (see det_ftz).
float det_prod(float a, float b) {
    precise float r = a * b;
    precise float s = (a * uintBitsToFloat(0x5F800000u)) * b; // a * 2^64 * b
    uint ur = floatBitsToUint(r), us = floatBitsToUint(s);
    uint keep = ((ur & 0x7FFFFFFFu) + 0x7F7FFFFFu) >> 31;    // |r| > 2^-126, inf, NaN
    uint xs = us & 0x7FFFFFFFu;
    // |s| >= 2^-62, and not inf or NaN (a zero times a large factor)
    uint up = ((xs + 0x5F800000u) >> 31) & (1u - ((xs + 0x00800000u) >> 31));
    uint sign = (floatBitsToUint(a) ^ floatBitsToUint(b)) & 0x80000000u;
    return uintBitsToFloat(ur * keep + (sign | (0x00800000u * up)) * (1u - keep));
}

// det_mad is a * b + c with two roundings, subnormal inputs taken as zero,
// no subnormal product or result.
float det_mad(float a, float b, float c) {
    float p = det_prod(det_ftz(a), det_ftz(b));
    precise float r = p + det_ftz(c);
    return det_ftz(r);
}

// det_pack returns sign | (q * 2^e rounded to 24 bits), where q's leading
// bit is at position n - 1 (n in 25..31) and sticky says whether anything
// nonzero lies below q. Exponents below the normal range give zero, above
// it infinity.
float det_pack(uint sign, uint q, int n, int e, bool sticky) {
    uint d = uint(n - 24);
    uint m = q >> d;
    uint rem = q & ((1u << d) - 1u);
    uint half_ = 1u << (d - 1u);
    if (rem > half_ || (rem == half_ && (sticky || (m & 1u) != 0u))) m++;
    int top = e + n - 1; // exponent of q's leading bit
    if (m == 0x1000000u) {
        m >>= 1;
        top++;
    }
    if (top > 127) return uintBitsToFloat(sign | 0x7F800000u);
    if (top < -126) return uintBitsToFloat(sign);
    return uintBitsToFloat(sign | (uint(top + 127) << 23) | (m & 0x7FFFFFu));
}

// det_div is a / b correctly rounded (to nearest even), subnormal inputs
// taken as zero and subnormal results flushed: long division of the
// significands.
float det_div(float a, float b) {
    uint ua = floatBitsToUint(a), ub = floatBitsToUint(b);
    uint sign = (ua ^ ub) & 0x80000000u;
    uint ea = (ua >> 23) & 255u, eb = (ub >> 23) & 255u;
    bool za = ea == 0u, zb = eb == 0u;
    bool ia = ea == 255u, ib = eb == 255u;
    if ((ia && (ua & 0x7FFFFFu) != 0u) || (ib && (ub & 0x7FFFFFu) != 0u)) return DET_NAN;
    if ((za && zb) || (ia && ib)) return DET_NAN;
    if (ia || zb) return uintBitsToFloat(sign | 0x7F800000u);
    if (za || ib) return uintBitsToFloat(sign);
    uint ma = (ua & 0x7FFFFFu) | 0x800000u, mb = (ub & 0x7FFFFFu) | 0x800000u;
    int e = int(ea) - int(eb);
    if (ma < mb) {
        ma <<= 1;
        e--;
    }
    // ma / mb is in [1, 2): 26 quotient bits, then the remainder's sticky bit.
    uint q = 0u, r = ma;
    for (int i = 0; i < 26; i++) {
        q <<= 1;
        if (r >= mb) {
            q |= 1u;
            r -= mb;
        }
        r <<= 1;
    }
    return det_pack(sign, q, 26, e - 25, r != 0u);
}

// det_sqrt is sqrt(x) correctly rounded: NaN below zero, ±0 and +inf
// themselves, subnormals taken as zero. Digit-by-digit square root of the
// significand.
float det_sqrt(float x) {
    uint u = floatBitsToUint(x);
    uint ex = (u >> 23) & 255u;
    if (ex == 0u) return uintBitsToFloat(u & 0x80000000u);
    if ((u & 0x80000000u) != 0u || (ex == 255u && (u & 0x7FFFFFu) != 0u)) return DET_NAN;
    if (ex == 255u) return x;
    uint m = (u & 0x7FFFFFu) | 0x800000u;
    int k = int(ex) - 150; // x = m * 2^k
    if ((k & 1) != 0) {
        m <<= 1;
        k--;
    }
    // root = floor(sqrt(m * 2^28)): m * 2^28 has at most 54 bits, taken two
    // at a time from the top; bits below 28 are zero.
    uint root = 0u, rem = 0u;
    for (int i = 26; i >= 0; i--) {
        int lo = 2 * i - 28; // position in m of the pair's low bit
        uint pair = lo >= 0 ? (m >> uint(lo)) & 3u : (lo == -1 ? (m & 1u) << 1 : 0u);
        rem = (rem << 2) | pair;
        uint trial = (root << 2) | 1u;
        root <<= 1;
        if (rem >= trial) {
            rem -= trial;
            root |= 1u;
        }
    }
    int n = findMSB(root) + 1; // 26 or 27
    return det_pack(0u, root, n, k / 2 - 14, rem != 0u);
}

// det_exp is e^x, within a few ulp: x = k ln2 + r, |r| <= ln2/2, e^r by its
// Taylor series to r^8, times 2^k. NaN stays NaN, -inf and results below
// the normal range give 0, large ones +inf.
float det_exp(float x) {
    if (x != x) return x;
    if (x > 88.7228394) return DET_INF;
    if (x < -87.3365479) return 0.0;
    precise float kf = floor(x * 1.44269504 + 0.5);
    // ln 2 = LN2_HI + LN2_LO, LN2_HI with few bits so kf * LN2_HI is exact.
    const float LN2_HI = 0.693145752; // 0x3F317200
    const float LN2_LO = 1.42860677e-06;
    precise float r = (x - kf * LN2_HI) - kf * LN2_LO;
    precise float p = 1.0 + r * (1.0 + r * (0.5 + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 +
        r * (1.0 / 720.0 + r * (1.0 / 5040.0 + r * (1.0 / 40320.0))))))));
    int k = int(kf);
    // 2^k in two factors, each a normal float, so the product rounds once.
    int k1 = k / 2, k2 = k - k1;
    precise float y = (p * uintBitsToFloat(uint(k1 + 127) << 23)) * uintBitsToFloat(uint(k2 + 127) << 23);
    return det_ftz(y);
}

// det_log is ln(x) as PyTorch: NaN for NaN and x < 0, -inf for ±0 (and
// subnormals), inf for inf. x = m 2^e with m in [sqrt(1/2), sqrt(2)),
// ln(m) = 2 atanh(s), s = (m-1)/(m+1), by its odd series to s^13.
float det_log(float x) {
    uint u = floatBitsToUint(x);
    if (x != x) return x;
    if ((u & 0x7F800000u) == 0u) return -DET_INF;
    if (x < 0.0) return DET_NAN;
    if (u == 0x7F800000u) return x;
    int e = int(u >> 23) - 127;
    float m = uintBitsToFloat((u & 0x007FFFFFu) | 0x3F800000u); // [1, 2)
    if (m > 1.41421356) {
        m *= 0.5;
        e += 1;
    }
    precise float s = det_div(m - 1.0, m + 1.0);
    precise float z = s * s;
    precise float t = z * (1.0 / 3.0 + z * (1.0 / 5.0 + z * (1.0 / 7.0 + z * (1.0 / 9.0 + z * (1.0 / 11.0 + z * (1.0 / 13.0))))));
    float fe = float(e);
    const float LN2_HI = 0.693145752;
    const float LN2_LO = 1.42860677e-06;
    precise float lm = 2.0 * s + 2.0 * s * t;
    precise float r = fe * LN2_HI + (lm + fe * LN2_LO);
    return r;
}

// det_add, det_sub and det_mul are one correctly rounded operation each,
// subnormal inputs taken as zero and a subnormal result flushed, as
// SwiftShader does on x86 (det_prod says how a product's flush is
// decided): the building blocks of the functions below and of kernels'
// deterministic paths. Sums of flushed inputs are exact in the subnormal
// range, so det_ftz serves for them.
float det_add(float a, float b) {
    precise float r = det_ftz(a) + det_ftz(b);
    return det_ftz(r);
}
float det_sub(float a, float b) {
    precise float r = det_ftz(a) - det_ftz(b);
    return det_ftz(r);
}
float det_mul(float a, float b) { return det_prod(det_ftz(a), det_ftz(b)); }

// det_fadd, det_fsub and det_fmul are the elementwise add, sub and mul in
// deterministic mode: det_add, det_sub and det_mul.
float det_fadd(float a, float b) { return det_add(a, b); }
float det_fsub(float a, float b) { return det_sub(a, b); }
float det_fmul(float a, float b) { return det_mul(a, b); }

// det_rsqrt is 1/sqrt(x), two correct roundings: ±inf for ±0 (and
// subnormals), 0 for +inf, NaN below zero.
float det_rsqrt(float x) { return det_div(1.0, det_sqrt(x)); }

// det_tanh is tanh(x) as mathx.glsl's tanh_x (Cephes' tanhf): an odd
// polynomial below 0.625, 1 - 2/(e^2|x| + 1) up to 9, 1 past it; ±0 and NaN
// themselves, ±inf give ±1.
float det_tanh(float x_) {
    float x = det_ftz(x_); // SwiftShader's x == 0.0 holds for subnormals
    if (x != x || x == 0.0) return x;
    float a = abs(x);
    if (a < 0.625) {
        float z = det_mul(x, x);
        float q = det_mad(-5.70498872745e-3, z, 2.06390887954e-2);
        q = det_mad(q, z, -5.37397155531e-2);
        q = det_mad(q, z, 1.33314422036e-1);
        q = det_mad(q, z, -3.33332819422e-1);
        return det_add(x, det_mul(det_mul(x, z), q));
    }
    float r = a > 9.0 ? 1.0 : det_sub(1.0, det_div(2.0, det_add(det_exp(2.0 * a), 1.0)));
    return x < 0.0 ? -r : r;
}

// det_sigmoid is 1/(1 + e^-x), through e^x/(1 + e^x) for x < 0 as
// mathx.glsl's sigmoid_x; NaN stays NaN.
float det_sigmoid(float x) {
    if (x != x) return x;
    if (x >= 0.0) return det_div(1.0, det_add(1.0, det_exp(-x)));
    float e = det_exp(x);
    return det_div(e, det_add(1.0, e));
}

// ERFCC_POLY(T, MAD) is the polynomial of Numerical Recipes' erfcc in t,
// by Horner's rule with MAD(x, y, z) = x*y + z: fma in gelu.glsl's
// phi_tail, det_mad in det_phi_tail, one list of coefficients for both.
#define ERFCC_POLY(T, MAD) MAD(T, MAD(T, MAD(T, MAD(T, MAD(T, MAD(T, MAD(T, \
    MAD(T, 0.17087277, -0.82215223), 1.48851587), -1.13520398), 0.27886807), -0.18628806), \
    0.09678418), 0.37409196), 1.00002368)

// det_phi_tail is gelu.glsl's phi_tail, Phi(-a) for a >= 0, each operation
// fixed: erfc by Numerical Recipes' erfcc. Its exponent is kept exact by the
// split a = ah + (a - ah), ah * ah exact, and two exps: det_exp's error does
// not grow with its argument as driver exp's may, which phi_tail rounds
// once. a past 15 gives 0 (Phi(-15) is 4e-51).
float det_phi_tail(float a_) {
    float a = a_ > 15.0 ? 15.0 : a_; // NaN stays NaN
    float t = det_div(1.0, det_mad(0.35355339059327373, a, 1.0));
    float q = det_mul(t, ERFCC_POLY(t, det_mad));
    float ah = uintBitsToFloat(floatBitsToUint(a) & 0xFFFFF000u);
    float e1 = det_exp(det_mul(det_mul(-0.5, ah), ah));
    float arg = det_sub(det_sub(q, 1.26551223), det_mul(det_mul(0.5, det_sub(a, ah)), det_add(a, ah)));
    float r = det_mul(det_mul(det_mul(0.5, t), e1), det_exp(arg));
    return a_ > 15.0 ? 0.0 : r;
}

// det_normal_cdf is Phi(x), from the tail on the side where it is small
// (one inlined tail).
float det_normal_cdf(float x) {
    float t = det_phi_tail(abs(x));
    return x < 0.0 ? t : det_sub(1.0, t);
}

// det_erf is erf(x): its Taylor series to x^13 below 0.5 (no cancellation
// near 0), 1 - erfc(|x|) = 1 - 2 Phi(-|x| sqrt 2) above, sign restored; NaN
// stays NaN, ±inf give ±1.
float det_erf(float x_) {
    float x = det_ftz(x_);
    if (x != x || x == 0.0) return x;
    float a = abs(x), r;
    if (a < 0.5) {
        float z = det_mul(a, a);
        float q = det_mad(z, -1.0 / 75600.0, 1.0 / 9360.0);
        q = det_mad(z, q, -1.0 / 1320.0);
        q = det_mad(z, q, 1.0 / 216.0);
        q = det_mad(z, q, -1.0 / 42.0);
        q = det_mad(z, q, 1.0 / 10.0);
        q = det_mad(z, q, -1.0 / 3.0);
        q = det_mad(z, q, 1.0);
        r = det_mul(det_mul(a, 1.12837917), q); // 2/sqrt(pi)
    } else {
        r = det_sub(1.0, det_mul(2.0, det_phi_tail(det_mul(a, 1.41421356))));
    }
    return x < 0.0 ? -r : r;
}

// det_odd_int reports whether the finite p is an odd integer, in integer
// code (mod divides, and division is the driver's).
bool det_odd_int(float p) { return abs(p) < 16777216.0 && floor(p) == p && (int(p) & 1) != 0; }

// det_pow is mathx.glsl's pow_x (PyTorch's pow(tensor, scalar)) with every
// operation fixed: the small exponents by products, division and sqrt,
// others as e^(p ln|x|), whose error grows with |p ln|x|| as any fp32
// pow's through exp and log does.
float det_pow(float x, float p) {
    if (p == 2.0) return det_mul(x, x);
    if (p == 3.0) return det_mul(det_mul(x, x), x);
    if (p == 0.5) return det_sqrt(x);
    if (p == -0.5) return det_rsqrt(x);
    if (p == -1.0) return det_div(1.0, x);
    if (p == -2.0) return det_div(1.0, det_mul(x, x));
    if (p == 0.0 || x == 1.0) return 1.0;
    if (x != x || p != p) return DET_NAN;
    float a = abs(x);
    if (floatBitsToUint(abs(p)) == 0x7F800000u) {
        if (a == 1.0) return 1.0;
        return (a < 1.0) == (p > 0.0) ? 0.0 : DET_INF;
    }
    bool odd = det_odd_int(p);
    float r;
    if ((floatBitsToUint(a) & 0x7F800000u) == 0u) r = p > 0.0 ? 0.0 : DET_INF; // zero or subnormal
    else if (floatBitsToUint(a) == 0x7F800000u) r = p > 0.0 ? DET_INF : 0.0;
    else if (x < 0.0 && floor(p) != p) return DET_NAN;
    else r = det_exp(det_mul(p, det_log(a)));
    return odd && (floatBitsToUint(x) & 0x80000000u) != 0u ? -r : r;
}

#endif
