#version 450
// gelu_backward: dst = dy * gelu'(x) of the exact GELU.
// texel form
#define OP(dy, x) (DETERMINISTIC ? det_mul(dy, gelu_grad(x)) : (dy) * gelu_grad(x))
#include "ewise.glsl"
#include "gelu.glsl"
#include "binary.glsl"
