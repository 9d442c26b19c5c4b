#version 450
// max_cols: the max over a middle axis; NaN wins.
// texel form
#include "reduce.glsl"
#define COMB nan_max
#define IDENTITY NEG_INF
// Four rows ahead: nan_max's branches unrolled 16 rows deep took lavapipe
// 0.5-1.3 s to compile a pipeline, a sum's 0.1 s.
#define COLS_AHEAD 4u
#include "cols.glsl"
