#version 450
// softmax_backward: dx = y * (dy - sum(dy * y)) per row, y = softmax(x).
#define TERM(y, g) ((g) * (y))
#define OUT(y, g, s) ((y) * ((g) - (s)))
#include "softmax_back.glsl"
