#version 450
// broadcast_scale writes out = alpha * s[0] * x (or alpha * s[0] in x's shape
// with NO_X): the backward of sums, means and losses, where the upstream
// gradient is a one-element tensor still on the device. Deterministic
// mode: subnormal inputs and products flushed (det.glsl).
#include "ewise.glsl"
#include "det.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(constant_id = 4) const bool NO_X = false;
layout(push_constant) uniform Push { uint n; float alpha; } p;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) readonly buffer S { float s[]; };
layout(set = 0, binding = 2) writeonly buffer Out { uint o[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_STORE(o, o, OUT_DT)

void main() {
    float k = DETERMINISTIC ? det_mul(p.alpha, s[0]) : p.alpha * s[0];
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        vec2 v = vec2(k);
        if (!NO_X) {
            vec2 x = x_pair(w, p.n);
            v = DETERMINISTIC ? vec2(det_mul(k, x.x), det_mul(k, x.y)) : k * x;
        }
        o_pair(w, p.n, v);
    }
}
