#version 450
// argmax: the first index of the max over a middle axis; NaN wins.
#include "arg_reduce.glsl"
