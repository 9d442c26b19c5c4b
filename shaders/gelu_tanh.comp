#version 450
// gelu_tanh: dst = 0.5a(1 + tanh(sqrt(2/pi)(a + 0.044715a^3))).
// texel form
#define OP(a) gelu_tanh(a)
#include "ewise.glsl"
#include "gelu.glsl"
#include "unary.glsl"
