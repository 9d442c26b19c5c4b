#version 450
// relu: dst = max(a, 0), keeping NaN (GLSL max need not).
#define OP(a) relu(a)
#include "ewise.glsl"
float relu(float a) { return a > 0.0 || is_nan(a) ? a : 0.0; }
#include "unary.glsl"
