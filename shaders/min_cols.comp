#version 450
// min_cols: the min over a middle axis; NaN wins.
// texel form
#include "reduce.glsl"
float nan_min(float a, float b) { return -nan_max(-a, -b); }
#define COMB nan_min
#define IDENTITY uintBitsToFloat(0x7F800000u)
// Four rows ahead: nan_max's branches unrolled 16 rows deep took lavapipe
// 0.5-1.3 s to compile a pipeline, a sum's 0.1 s.
#define COLS_AHEAD 4u
#include "cols.glsl"
