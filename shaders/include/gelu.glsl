// GELU in its two forms: exact, x*Phi(x) with Phi the normal CDF
// (PyTorch's default), and the tanh approximation (approximate='tanh').
#ifndef VKAMP_GELU_GLSL
#define VKAMP_GELU_GLSL

#include "det.glsl"

// phi_tail returns Phi(-a) = 0.5 erfc(a/sqrt(2)) for a >= 0 (NaN stays NaN),
// by Numerical Recipes' erfcc: erfc(z) = t exp(-z^2 + P(t)), t = 1/(1 + z/2),
// a Chebyshev fit with relative error under 1.2e-7 for every z >= 0. GLSL
// has no erf. The exponent, near -a^2/2, is rounded once in fp32, which
// adds a relative error of about a^2/2 ulp to that of the driver's exp,
// which Vulkan allows 3 + 2|x| ulp and Mesa's has, computing
// exp2(x log2(e)). Keeping the exponent exact took a second exp, the most
// costly step on CPU drivers, for little: GELU's relative error for x in
// [-12, -9) went from 7.6e-6 (lavapipe) and 4.1e-6 (SwiftShader) to 1.04e-5
// on both, and stayed under 1e-6 for |x| < 3 (TestGELUTail bounds it).
// The polynomial is a chain of fmas and the 0.5 is e^-ln2 in the exponent:
// written as products of t and a constant, lavapipe's compiler made each
// of them a division of the constant by 1 + z/2, three divisions an
// element where one will do (GELU of fp16 on lavapipe, tools/bench: 5.8 ->
// 6.0 GB/s; TestGELUTail's worst error 9.14e-6 -> 8.94e-6 on lavapipe and
// SwiftShader alike).
float phi_tail(float a) {
    float t = 1.0 / (1.0 + 0.35355339059327373 * a); // 1/(1 + z/2), z = a/sqrt(2)
    float p = t * ERFCC_POLY(t, fma);
    if (a > 15.0) return 0.0; // Phi(-15) is 4e-51; driver exp need not reach 0 past its range
    return t * exp(p - 1.95865941 - 0.5 * a * a); // 1.95865941 = 1.26551223 + ln 2
}

// normal_cdf is Phi(x), from the tail on the side where it is small. One
// phi_tail of |x| serves both sides: written as two calls, CPU drivers ran
// both in every lane (they evaluate both sides of a branch), twice the work.
float normal_cdf(float x) {
    float t = phi_tail(abs(x));
    return x < 0.0 ? t : 1.0 - t;
}

// gelu is x*Phi(x): x past 15 gives x, x below -15 gives -0, and -inf NaN
// (inf*0), as the formula does.
float gelu(float x) { return DETERMINISTIC ? det_mul(x, det_normal_cdf(x)) : x * normal_cdf(x); }

// On the deterministic path each function is the same formula with
// det.glsl's operations.

// gelu_grad is d gelu/dx = Phi(x) + x phi(x), phi the normal density; x*x
// overflows to inf for huge x and exp(-inf) is 0, so only ±inf give NaN.
float gelu_grad(float x) {
    if (DETERMINISTIC) {
        float e = det_exp(det_mul(det_mul(-0.5, x), x));
        return det_add(det_normal_cdf(x), det_mul(det_mul(x, 0.3989422804014327), e));
    }
    return normal_cdf(x) + x * 0.3989422804014327 * exp(-0.5 * x * x);
}

// The tanh form, through the identity 0.5(1 + tanh(u)) = 1/(1 + exp(-2u)):
// it needs one exp, and saturates to exact 0 and x where tanh would give
// inf/inf.

const float GELU_K = 0.7978845608028654; // sqrt(2/pi)
const float GELU_C = 0.044715;

// det_gelu_u is GELU_K * (x + GELU_C * x^3), each operation fixed.
float det_gelu_u(float x) { return det_mul(GELU_K, det_add(x, det_mul(det_mul(det_mul(GELU_C, x), x), x))); }

float gelu_tanh(float x) {
    if (DETERMINISTIC) return det_div(x, det_add(1.0, det_exp(det_mul(-2.0, det_gelu_u(x)))));
    float u = GELU_K * (x + GELU_C * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

// gelu_tanh_grad is d gelu_tanh/dx = s + 2x s(1-s) u' with s = sigmoid(2u). Past
// |x| = 1e6 the second term is exactly 0 in fp32 arithmetic but x*u' would
// overflow, so finite large x take the limit (inf still gives NaN, as the
// formula does).
float gelu_tanh_grad(float x) {
    if (abs(x) > 1e6 && !is_inf(x)) return x > 0.0 ? 1.0 : 0.0;
    if (DETERMINISTIC) {
        float du = det_mul(GELU_K, det_add(1.0, det_mul(det_mul(3.0 * GELU_C, x), x)));
        float s = det_div(1.0, det_add(1.0, det_exp(det_mul(-2.0, det_gelu_u(x)))));
        return det_add(s, det_mul(det_mul(det_mul(det_mul(2.0, x), du), s), det_sub(1.0, s)));
    }
    float u = GELU_K * (x + GELU_C * x * x * x);
    float du = GELU_K * (1.0 + 3.0 * GELU_C * x * x);
    float s = 1.0 / (1.0 + exp(-2.0 * u));
    return s + 2.0 * x * du * s * (1.0 - s);
}

#endif
