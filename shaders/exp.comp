#version 450
// exp: dst = e^a. NaN stays NaN: SwiftShader's exp gives +inf for it.
// texel form
#include "ewise.glsl"
#include "det.glsl"
#define OP(a) (DETERMINISTIC ? det_exp(a) : is_nan(a) ? (a) : exp(a))
#include "unary.glsl"
