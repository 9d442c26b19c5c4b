#version 450
// silu_backward: dst = dy * silu'(x) = dy * s (1 + x (1 - s)), s =
// sigmoid(x), PyTorch's formula (-inf gives NaN there too).
// texel form
#include "ewise.glsl"
#include "mathx.glsl"
float silu_grad(float x) {
    float s = sigmoid_x(x);
    if (DETERMINISTIC) return det_mul(s, det_add(1.0, det_mul(x, det_sub(1.0, s))));
    return s * (1.0 + x * (1.0 - s));
}
#define OP(dy, x) (DETERMINISTIC ? det_mul(dy, silu_grad(x)) : (dy) * silu_grad(x))
#include "binary.glsl"
