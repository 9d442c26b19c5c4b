#version 450
// gelu: dst = a*Phi(a) = 0.5a(1 + erf(a/sqrt(2))), the exact GELU.
// texel form
#define OP(a) gelu(a)
#include "ewise.glsl"
#include "gelu.glsl"
#include "unary.glsl"
