#version 450
// softmax_tex is softmax.comp's texel form for CPU drivers (rows_tex.glsl).
#define TEXELS
#define OUT(d, s) (DETERMINISTIC ? det_div(exp_(d), (s)) : exp_(d) / (s))
#include "softmax.glsl"
