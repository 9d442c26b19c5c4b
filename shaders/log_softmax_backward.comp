#version 450
// log_softmax_backward: dx = dy - exp(y) * sum(dy) per row, y = log_softmax(x).
// exp(-inf) is spelled 0: driver exp need not handle it.
#define TERM(y, g) (g)
#define OUT(y, g, s) ((g) - (is_inf(y) && (y) < 0.0 ? 0.0 : exp(y)) * (s))
#define DET_TERM(y, g) (g)
#define DET_OUT(y, g, s) det_sub(g, det_mul(is_inf(y) && (y) < 0.0 ? 0.0 : det_exp(y), s))
#include "softmax_back.glsl"
