#version 450
// max_cols: the max over a middle axis; NaN wins.
// texel form
#include "reduce.glsl"
#define COMB nan_max
#define IDENTITY NEG_INF
#include "cols.glsl"
