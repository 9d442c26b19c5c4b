#version 450
// softmax_backward: dx = y * (dy - sum(dy * y)) per row, y = softmax(x).
#define TERM(y, g) ((g) * (y))
// On the deterministic path (det_extra.glsl) products and differences
// round once, flushed, and the row sum adds them in order.
#define ACC(s, y, g) (DETERMINISTIC ? det_mad((g), (y), (s)) : (s) + (g) * (y))
#define OUT(y, g, s) (xmul((y), xsub((g), (s))))
#include "softmax_back.glsl"
