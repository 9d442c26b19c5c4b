#version 450
// sum_rows_tex is sum_rows.comp's texel form for CPU drivers (rows_tex.glsl).
#define DRIVER_HALVES_OK // adds, multiplies or converts what it decodes (texels.glsl)
#define TEXELS
#define PRE(v) (v)
#define COMB DADD
#define IDENTITY 0.0
#include "rows.glsl"
