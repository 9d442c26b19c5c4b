#version 450
// dropout_seeded is dropout.comp with its seed read from a buffer when the
// kernel runs: seed[0] * 0x9E3779B9 + pc.k, so that a captured step replays
// with the seed written before each replay (one mask per op from pc.k).
#include "ewise.glsl"
#include "det_extra.glsl"
#include "dropout.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform Push { uint n; uint k; uint threshold; float scale; } pc;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) readonly buffer Seed { uint seed[]; };
layout(set = 0, binding = 2) writeonly buffer Out { uint o[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_STORE(o, o, OUT_DT)

void main() {
    uint h = pcg_hash(seed[0] * 0x9E3779B9u + pc.k);
    GRID_STRIDE(w, (pc.n + 1u) / 2u) {
        vec2 v = x_pair(w, pc.n);
        v.x = xmul(v.x, dropout_keep(2u * w, h, pc.threshold, pc.scale));
        v.y = xmul(v.y, dropout_keep(2u * w + 1u, h, pc.threshold, pc.scale));
        o_pair(w, pc.n, v);
    }
}
