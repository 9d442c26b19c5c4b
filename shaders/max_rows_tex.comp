#version 450
// max_rows_tex is max_rows.comp's texel form for CPU drivers (rows_tex.glsl).
#define TEXELS
#define PRE(v) (v)
#define COMB nan_max
#define IDENTITY NEG_INF
#include "rows.glsl"
