#version 450
// max_rows: the max of each row; NaN wins.
#define PRE(v) (v)
#define COMB nan_max
#define IDENTITY NEG_INF
#include "rows.glsl"
