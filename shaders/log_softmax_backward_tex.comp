#version 450
// log_softmax_backward_tex is log_softmax_backward.comp's texel form for CPU drivers (rows_tex.glsl).
#define TEXELS
// exp(-inf) is spelled 0: driver exp need not handle it.
#define TERM(y, g) (g)
#define OUT(y, g, s) ((g) - (is_inf(y) && (y) < 0.0 ? 0.0 : exp(y)) * (s))
#define DET_TERM(y, g) (g)
#define DET_OUT(y, g, s) det_sub(g, det_mul(is_inf(y) && (y) < 0.0 ? 0.0 : det_exp(y), s))
#include "softmax_back.glsl"
