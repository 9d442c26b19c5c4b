#version 450
// sumsq_rows_tex is sumsq_rows.comp's texel form for CPU drivers (rows_tex.glsl).
#define TEXELS
#define PRE(v) (DETERMINISTIC ? det_mul(v, v) : (v) * (v))
#define COMB DADD
#define IDENTITY 0.0
#include "rows.glsl"
