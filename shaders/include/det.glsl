// Deterministic arithmetic: the same bits on every driver. A kernel that
// includes this file declares the specialization constant DETERMINISTIC
// (id 15), which the runtime sets on a device opened with
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

// det_ftz is x, or zero of x's sign when x is subnormal.
float det_ftz(float x) {
    uint u = floatBitsToUint(x);
    return (u & 0x7F800000u) == 0u ? uintBitsToFloat(u & 0x80000000u) : x;
}

// det_mad is a * b + c with two roundings, no subnormal product or result.
float det_mad(float a, float b, float c) {
    precise float p = a * b;
    precise float r = det_ftz(p) + c;
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

#endif
