#version 450
// add_bias: dst = x + bias[i % cols], bias broadcast over the rows of x.
#include "ewise.glsl"

layout(push_constant) uniform Push { uint n; uint cols; } p;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) readonly buffer Bias { uint bias[]; };
layout(set = 0, binding = 2) writeonly buffer D { uint d[]; };

DEFINE_LOADS(x, x, IN0_F16)
DEFINE_LOADS(bias, bias, IN1_F16)
DEFINE_STORE(d, d, OUT_F16)

void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        uint j = (2u * w) % p.cols;
        uint k = j + 1u == p.cols ? 0u : j + 1u;
        vec2 v = x_pair(w, p.n);
        d_pair(w, p.n, v + vec2(bias_at(j), bias_at(k)));
    }
}
