#version 450
// sum_rows: the sum of each row (last axis), scaled (for means).
#define PRE(v) (v)
#define COMB DADD
#define IDENTITY 0.0
#include "rows.glsl"
