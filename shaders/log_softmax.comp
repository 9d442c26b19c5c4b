#version 450
// log_softmax: (x - max) - log(sum(exp(x - max))) per row.
#define OUT(d, s) sub_((d), log_(s))
#include "softmax.glsl"
