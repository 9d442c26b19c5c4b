#version 450
// sum_cols: the sum over a middle axis, scaled (for means).
// texel form
#define DRIVER_HALVES_OK // adds, multiplies or converts what it decodes (texels.glsl)
#include "reduce.glsl"
#define COMB DADD
#define IDENTITY 0.0
#include "cols.glsl"
