#version 450
// dropout zeroes each element with probability p and scales the rest by
// 1/(1-p). The mask is a hash of (seed, index), so the backward pass
// recomputes it from the seed instead of storing it, and a seed gives the
// same mask on every device (integer code).
#include "ewise.glsl"
#include "det_extra.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform Push { uint n; uint seed; uint threshold; float scale; } pc;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) writeonly buffer Out { uint o[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_STORE(o, o, OUT_DT)

// pcg_hash is a PCG-style integer hash (Jarzynski and Olano, 2020).
uint pcg_hash(uint v) {
    uint state = v * 747796405u + 2891336453u;
    uint word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

float keep(uint i) { return pcg_hash(i ^ pcg_hash(pc.seed)) >= pc.threshold ? pc.scale : 0.0; }

void main() {
    GRID_STRIDE(w, (pc.n + 1u) / 2u) {
        vec2 v = x_pair(w, pc.n);
        v.x = xmul(v.x, keep(2u * w));
        v.y = xmul(v.y, keep(2u * w + 1u));
        o_pair(w, pc.n, v);
    }
}
