#version 450
// min_rows_tex is min_rows.comp's texel form for CPU drivers (rows_tex.glsl).
#define TEXELS
#include "ewise.glsl"
float nan_min(float a, float b) { return -nan_max(-a, -b); }
#define PRE(v) (v)
#define COMB nan_min
#define IDENTITY uintBitsToFloat(0x7F800000u)
#include "rows.glsl"
