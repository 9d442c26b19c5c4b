#version 450
// exp: dst = e^a.
#define OP(a) exp(a)
#include "unary.glsl"
