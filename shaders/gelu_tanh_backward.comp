#version 450
// gelu_tanh_backward: dst = dy * gelu_tanh'(x).
// texel form
#define OP(dy, x) (DETERMINISTIC ? det_mul(dy, gelu_tanh_grad(x)) : (dy) * gelu_tanh_grad(x))
#include "ewise.glsl"
#include "gelu.glsl"
#include "binary.glsl"
