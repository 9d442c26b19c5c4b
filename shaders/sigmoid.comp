#version 450
// sigmoid: dst = 1/(1 + e^-a) (mathx.glsl).
// texel form
#include "ewise.glsl"
#include "mathx.glsl"
#define OP(a) sigmoid_x(a)
#include "unary.glsl"
