#version 450
// silu: dst = a * sigmoid(a) (mathx.glsl), rounded once to the output
// dtype. -inf gives NaN (-inf * 0), as PyTorch's silu.
// texel form
#include "ewise.glsl"
#include "mathx.glsl"
#define OP(a) (DETERMINISTIC ? det_mul(a, sigmoid_x(a)) : (a) * sigmoid_x(a))
#include "unary.glsl"
