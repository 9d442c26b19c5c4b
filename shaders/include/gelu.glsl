// GELU, tanh form, through the identity 0.5(1 + tanh(u)) = 1/(1 + exp(-2u)):
// it needs one exp, and saturates to exact 0 and x where tanh would give
// inf/inf.
#ifndef VKAMP_GELU_GLSL
#define VKAMP_GELU_GLSL

const float GELU_K = 0.7978845608028654; // sqrt(2/pi)
const float GELU_C = 0.044715;

float gelu(float x) {
    float u = GELU_K * (x + GELU_C * x * x * x);
    return x / (1.0 + exp(-2.0 * u));
}

// gelu_grad is d gelu/dx = s + 2x s(1-s) u' with s = sigmoid(2u). Past
// |x| = 1e6 the second term is exactly 0 in fp32 arithmetic but x*u' would
// overflow, so finite large x take the limit (inf still gives NaN, as the
// formula does).
float gelu_grad(float x) {
    if (abs(x) > 1e6 && !is_inf(x)) return x > 0.0 ? 1.0 : 0.0;
    float u = GELU_K * (x + GELU_C * x * x * x);
    float du = GELU_K * (1.0 + 3.0 * GELU_C * x * x);
    float s = 1.0 / (1.0 + exp(-2.0 * u));
    return s + 2.0 * x * du * s * (1.0 - s);
}

#endif
