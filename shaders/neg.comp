#version 450
// neg: dst = -a.
// texel form
#define OP(a) (-(a))
#include "unary.glsl"
