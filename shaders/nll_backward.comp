#version 450
// nll_backward is the gradient of alpha times the summed negative
// log-likelihood with respect to the log-probabilities, times the upstream
// gradient s[0]: -alpha * s[0] at each row's label, 0 elsewhere. A row whose
// label is outside [0, cols) gets NaN in every class and raises the
// device's assert, as cross_entropy_backward does.
#define ASSERT_BINDING 3
#include "ewise.glsl"
#include "assert.glsl"
#include "det.glsl"

layout(push_constant) uniform Push { uint rows; uint cols; float alpha; } p;
layout(set = 0, binding = 0) readonly buffer Y { int label[]; };
layout(set = 0, binding = 1) readonly buffer S { float s[]; };
layout(set = 0, binding = 2) writeonly buffer Out { float o[]; };

void main() {
    float k = DETERMINISTIC ? det_mul(-p.alpha, s[0]) : -p.alpha * s[0];
    GRID_STRIDE(i, p.rows * p.cols) {
        uint r = i / p.cols, c = i - r * p.cols;
        int y = label[r];
        if (y < 0 || uint(y) >= p.cols) {
            if (c == 0u) raise_assert(r, uint(y), p.cols);
            o[i] = uintBitsToFloat(0x7FC00000u);
        } else {
            o[i] = c == uint(y) ? k : 0.0;
        }
    }
}
