#version 450
// softmax: exp(x - max) / sum(exp(x - max)) per row.
#define OUT(d, s) (exp_(d) / (s))
#include "softmax.glsl"
