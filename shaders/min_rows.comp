#version 450
// min_rows: the min of each row (last axis); NaN wins.
#include "ewise.glsl"
float nan_min(float a, float b) { return -nan_max(-a, -b); }
#define PRE(v) (v)
#define COMB nan_min
#define IDENTITY uintBitsToFloat(0x7F800000u)
#include "rows.glsl"
