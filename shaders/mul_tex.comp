#version 450
// mul_tex is mul.comp's texel form for CPU drivers (texels.glsl).
#define TEXELS
#define OP(a, b) (a * b)
#include "ewise.glsl"
#include "binary.glsl"
