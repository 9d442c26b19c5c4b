#version 450
// sqrt: dst = sqrt a; NaN for a < 0 (mathx.glsl).
// texel form
#include "ewise.glsl"
#include "mathx.glsl"
#define OP(a) sqrt_x(a)
#include "unary.glsl"
