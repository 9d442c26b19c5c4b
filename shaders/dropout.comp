#version 450
// dropout zeroes each element with probability p and scales the rest by
// 1/(1-p), with the mask of dropout.glsl for the seed pc.seed.
#include "ewise.glsl"
#include "det_extra.glsl"
#include "dropout.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform Push { uint n; uint seed; uint threshold; float scale; } pc;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) writeonly buffer Out { uint o[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_STORE(o, o, OUT_DT)

void main() {
    uint h = pcg_hash(pc.seed);
    GRID_STRIDE(w, (pc.n + 1u) / 2u) {
        vec2 v = x_pair(w, pc.n);
        v.x = xmul(v.x, dropout_keep(2u * w, h, pc.threshold, pc.scale));
        v.y = xmul(v.y, dropout_keep(2u * w + 1u, h, pc.threshold, pc.scale));
        o_pair(w, pc.n, v);
    }
}
