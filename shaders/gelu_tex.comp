#version 450
// gelu_tex is gelu.comp's texel form for CPU drivers (texels.glsl).
#define TEXELS
#define OP(a) gelu(a)
#include "ewise.glsl"
#include "gelu.glsl"
#include "unary.glsl"
