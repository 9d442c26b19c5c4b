#version 450
// pow: dst = a^alpha, as PyTorch's pow(tensor, scalar) (mathx.glsl).
// texel form
#include "ewise.glsl"
#include "mathx.glsl"
#define OP(a) pow_x(a, p.alpha)
#include "unary.glsl"
