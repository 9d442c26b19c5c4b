#version 450
// add_bias: dst = x + bias[i % cols], bias broadcast over the rows of x.
// Deterministic mode: subnormal inputs and sums flushed (det.glsl).
#include "ewise.glsl"
#include "det.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 2) const uint IN1_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform Push { uint n; uint cols; } p;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) readonly buffer Bias { uint bias[]; };
layout(set = 0, binding = 2) writeonly buffer D { uint d[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_LOADS(bias, bias, IN1_DT)
DEFINE_STORE(d, d, OUT_DT)

void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        uint j = (2u * w) % p.cols;
        uint k = j + 1u == p.cols ? 0u : j + 1u;
        vec2 v = x_pair(w, p.n);
        vec2 b = vec2(bias_at(j), bias_at(k));
        d_pair(w, p.n, DETERMINISTIC ? vec2(det_add(v.x, b.x), det_add(v.y, b.y)) : v + b);
    }
}
