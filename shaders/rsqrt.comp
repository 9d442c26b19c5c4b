#version 450
// rsqrt: dst = 1/sqrt a; ±inf for ±0 (mathx.glsl).
// texel form
#include "ewise.glsl"
#include "mathx.glsl"
#define OP(a) rsqrt_x(a)
#include "unary.glsl"
