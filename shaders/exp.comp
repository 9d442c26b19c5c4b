#version 450
// exp: dst = e^a. NaN stays NaN: SwiftShader's exp gives +inf for it.
#define OP(a) (is_nan(a) ? (a) : exp(a))
#include "unary.glsl"
