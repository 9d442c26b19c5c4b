#version 450
// log_softmax_tex is log_softmax.comp's texel form for CPU drivers (rows_tex.glsl).
#define TEXELS
#define OUT(d, s) sub_((d), log_(s))
#include "softmax.glsl"
