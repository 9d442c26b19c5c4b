#version 450
// gelu_backward_tex is gelu_backward.comp's texel form for CPU drivers (texels.glsl).
#define TEXELS
#define OP(dy, x) (DETERMINISTIC ? det_mul(dy, gelu_grad(x)) : (dy) * gelu_grad(x))
#include "ewise.glsl"
#include "gelu.glsl"
#include "binary.glsl"
