#version 450
// gelu_tanh_backward: dst = dy * gelu_tanh'(x).
#define OP(dy, x) ((dy) * gelu_tanh_grad(x))
#include "ewise.glsl"
#include "gelu.glsl"
#include "binary.glsl"
