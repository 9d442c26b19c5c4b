#version 450
// sigmoid: dst = 1/(1 + e^-a) (mathx.glsl).
#include "ewise.glsl"
#include "mathx.glsl"
#define OP(a) sigmoid_x(a)
#include "unary.glsl"
