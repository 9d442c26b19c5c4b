#version 450
// sumsq_rows: the sum of squares of each row, scaled.
#define PRE(v) (DETERMINISTIC ? det_mul(v, v) : (v) * (v))
#define COMB DADD
#define IDENTITY 0.0
#include "rows.glsl"
