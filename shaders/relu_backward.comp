#version 450
// relu_backward: dst = dy where x > 0, else 0; a NaN x gives NaN.
// texel form
#define OP(dy, x) relu_grad(dy, x)
#include "ewise.glsl"
#include "det.glsl"
// Deterministic mode: subnormal dy and x are zero, as SwiftShader reads them.
float relu_grad(float dy_, float x_) {
    float dy = DETERMINISTIC ? det_ftz(dy_) : dy_, x = DETERMINISTIC ? det_ftz(x_) : x_;
    if (is_nan(x)) return x;
    return x > 0.0 ? dy : 0.0;
}
#include "binary.glsl"
