#version 450
// sum_cols: the sum over a middle axis, scaled (for means).
// texel form
#include "reduce.glsl"
#define COMB DADD
#define IDENTITY 0.0
#include "cols.glsl"
