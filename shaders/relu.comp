#version 450
// relu: dst = max(a, 0), keeping NaN (GLSL max need not).
// texel form
#define OP(a) relu(a)
#include "ewise.glsl"
#include "det.glsl"
// Deterministic mode: a subnormal a is zero (SwiftShader compares it as
// zero, lavapipe does not).
float relu(float a_) {
    float a = DETERMINISTIC ? det_ftz(a_) : a_;
    return a > 0.0 || is_nan(a) ? a : 0.0;
}
#include "unary.glsl"
