#version 450
// cross_entropy_backward is the gradient of nll(log_softmax(x)) with
// respect to x, from the saved log-probabilities: (softmax - onehot(label))
// scaled by alpha (1/rows for a mean) and the upstream gradient s[0].
// Labels are int32 class indices; a row whose label is outside [0, cols)
// gets NaN in every class, whatever the scale, and raises the device's
// assert, so that no optimizer step can take it for a gradient.
#define ASSERT_BINDING 4
#include "ewise.glsl"
#include "assert.glsl"
#include "det.glsl"

layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform Push { uint rows; uint cols; float alpha; } p;
layout(set = 0, binding = 0) readonly buffer L { float logp[]; };
layout(set = 0, binding = 1) readonly buffer Y { int label[]; };
layout(set = 0, binding = 2) readonly buffer S { float s[]; };
layout(set = 0, binding = 3) writeonly buffer Out { uint o[]; };

DEFINE_STORE(o, o, OUT_DT)

float grad(uint i, float k) {
    uint r = i / p.cols, c = i - r * p.cols;
    int y = label[r];
    if (y < 0 || uint(y) >= p.cols) {
        if (c == 0u) raise_assert(r, uint(y), p.cols);
        return uintBitsToFloat(0x7FC00000u);
    }
    if (DETERMINISTIC) {
        float g = det_exp(logp[i]);
        if (c == uint(y)) g = det_sub(g, 1.0);
        return det_mul(g, k);
    }
    float g = exp(logp[i]);
    if (c == uint(y)) g -= 1.0;
    return g * k;
}

void main() {
    float k = DETERMINISTIC ? det_mul(p.alpha, s[0]) : p.alpha * s[0];
    uint n = p.rows * p.cols;
    GRID_STRIDE(w, (n + 1u) / 2u) {
        vec2 v = vec2(grad(2u * w, k), 0.0);
        if (2u * w + 1u < n) v.y = grad(2u * w + 1u, k);
        o_pair(w, n, v);
    }
}
