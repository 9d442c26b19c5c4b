#version 450
// argmin: the first index of the min over a middle axis; NaN wins.
#define ARG_MIN
#include "arg_reduce.glsl"
