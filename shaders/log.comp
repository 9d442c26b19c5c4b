#version 450
// log: dst = ln a; NaN for a < 0, -inf for ±0 (mathx.glsl).
// texel form
#include "ewise.glsl"
#include "mathx.glsl"
#define OP(a) log_x(a)
#include "unary.glsl"
