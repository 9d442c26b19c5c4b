#version 450
// cross_entropy_backward is the gradient of nll(log_softmax(x)) with
// respect to x, from the saved log-probabilities: (softmax - onehot(label))
// scaled by alpha (1/rows for a mean) and the upstream gradient s[0].
// Labels are int32 class indices.
#include "ewise.glsl"

layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform Push { uint rows; uint cols; float alpha; } p;
layout(set = 0, binding = 0) readonly buffer L { float logp[]; };
layout(set = 0, binding = 1) readonly buffer Y { int label[]; };
layout(set = 0, binding = 2) readonly buffer S { float s[]; };
layout(set = 0, binding = 3) writeonly buffer Out { uint o[]; };

DEFINE_STORE(o, o, OUT_DT)

float grad(uint i, float k) {
    uint r = i / p.cols, c = i - r * p.cols;
    float g = exp(logp[i]);
    if (int(c) == label[r]) g -= 1.0;
    return g * k;
}

void main() {
    float k = p.alpha * s[0];
    uint n = p.rows * p.cols;
    GRID_STRIDE(w, (n + 1u) / 2u) {
        vec2 v = vec2(grad(2u * w, k), 0.0);
        if (2u * w + 1u < n) v.y = grad(2u * w + 1u, k);
        o_pair(w, n, v);
    }
}
