#version 450
// mish: dst = a * tanh(softplus(a)), rounded once to the output dtype.
// tanh(log(1 + e^a)) is s(1 + r)/(1 + r^2) with s = sigmoid(a), r =
// sigmoid(-a): no overflow, and full relative accuracy for negative a,
// where log(1 + e^a) would round to 0. -inf gives NaN (-inf * 0), as
// PyTorch's mish.
// texel form
#include "ewise.glsl"
#include "mathx.glsl"
float mish_t(float a) {
    float s = sigmoid_x(a), r = sigmoid_x(-a);
    if (DETERMINISTIC) return det_div(det_mul(s, det_add(1.0, r)), det_add(1.0, det_mul(r, r)));
    return s * (1.0 + r) / (1.0 + r * r);
}
#define OP(a) (DETERMINISTIC ? det_mul(a, mish_t(a)) : (a) * mish_t(a))
#include "unary.glsl"
