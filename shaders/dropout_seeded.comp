#version 450
// dropout_seeded is dropout.comp with its seed read from a buffer when the
// kernel runs: seed[0] * 0x9E3779B9 + p.k, so that a captured step replays
// with the seed written before each replay (one mask per op from p.k).
// texel form
#define DRIVER_HALVES_OK // adds, multiplies or converts what it decodes (texels.glsl)
#include "ewise.glsl"
#include "det_extra.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform Push { uint n; uint k; uint threshold; float scale; } p;
layout(set = 0, binding = 1) readonly buffer Seed { uint seed[]; };
#if defined(TEXELS)
#include "texels.glsl"
layout(set = 0, binding = 0) uniform usamplerBuffer x;

DEFINE_TEX_LOADS(x, x, IN0_DT)
DEFINE_TEX_OUTPUT(2, Out, o, OUT_DT)
#else
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 2) writeonly buffer Out { uint o[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_STORE(o, o, OUT_DT)
#endif
#include "dropout.glsl"

void main() {
    uint h = pcg_hash(seed[0] * 0x9E3779B9u + p.k);
    DROPOUT_MAIN(h)
}
