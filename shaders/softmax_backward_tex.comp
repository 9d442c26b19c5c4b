#version 450
// softmax_backward_tex is softmax_backward.comp's texel form for CPU drivers (rows_tex.glsl).
#define TEXELS
#define TERM(y, g) ((g) * (y))
#define OUT(y, g, s) ((y) * ((g) - (s)))
#define DET_TERM(y, g) det_mul(g, y)
#define DET_OUT(y, g, s) det_mul(y, det_sub(g, s))
#include "softmax_back.glsl"
