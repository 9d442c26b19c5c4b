#version 450
// neg: dst = -a.
#define OP(a) (-(a))
#include "unary.glsl"
