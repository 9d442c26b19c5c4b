#version 450
// relu_backward: dst = dy where x > 0, else 0; a NaN x gives NaN.
#define OP(dy, x) relu_grad(dy, x)
#include "ewise.glsl"
float relu_grad(float dy, float x) {
    if (is_nan(x)) return x;
    return x > 0.0 ? dy : 0.0;
}
#include "binary.glsl"
