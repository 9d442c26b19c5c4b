#version 450
// sumsq_rows: the sum of squares of each row, scaled.
#define PRE(v) ((v) * (v))
#define COMB ADD
#define IDENTITY 0.0
#include "rows.glsl"
