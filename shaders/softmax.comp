#version 450
// softmax: exp(x - max) / sum(exp(x - max)) per row.
#define OUT(d, s) (DETERMINISTIC ? det_div(exp_(d), (s)) : exp_(d) / (s))
#include "softmax.glsl"
