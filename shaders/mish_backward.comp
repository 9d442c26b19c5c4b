#version 450
// mish_backward: dst = dy * mish'(x) = dy * (t + x s (1 - t^2)), t =
// tanh(softplus(x)) as in mish.comp, s = sigmoid(x): PyTorch's formula
// (-inf gives NaN there too).
// texel form
#include "ewise.glsl"
#include "mathx.glsl"
float mish_grad(float x) {
    float s = sigmoid_x(x), r = sigmoid_x(-x);
    if (DETERMINISTIC) {
        float t = det_div(det_mul(s, det_add(1.0, r)), det_add(1.0, det_mul(r, r)));
        return det_add(t, det_mul(det_mul(x, s), det_sub(1.0, det_mul(t, t))));
    }
    float t = s * (1.0 + r) / (1.0 + r * r);
    return t + x * s * (1.0 - t * t);
}
#define OP(dy, x) (DETERMINISTIC ? det_mul(dy, mish_grad(x)) : (dy) * mish_grad(x))
#include "binary.glsl"
