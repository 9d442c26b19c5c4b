#version 450
// gelu: dst = 0.5a(1 + tanh(sqrt(2/pi)(a + 0.044715a^3))).
#define OP(a) gelu(a)
#include "ewise.glsl"
#include "gelu.glsl"
#include "unary.glsl"
