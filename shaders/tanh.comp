#version 450
// tanh: dst = tanh a (mathx.glsl).
// texel form
#include "ewise.glsl"
#include "mathx.glsl"
#define OP(a) tanh_x(a)
#include "unary.glsl"
