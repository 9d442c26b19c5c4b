#version 450
// log_softmax_backward: dx = dy - exp(y) * sum(dy) per row, y = log_softmax(x).
// exp(-inf) is spelled 0: driver exp need not handle it.
#define TERM(y, g) (g)
#define OUT(y, g, s) (xsub((g), xmul((is_inf(y) && (y) < 0.0 ? 0.0 : xexp(y)), (s))))
#include "softmax_back.glsl"
