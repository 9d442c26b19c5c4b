#version 450
// min_cols: the min over a middle axis; NaN wins.
// texel form
#include "reduce.glsl"
float nan_min(float a, float b) { return -nan_max(-a, -b); }
#define COMB nan_min
#define IDENTITY uintBitsToFloat(0x7F800000u)
#include "cols.glsl"
