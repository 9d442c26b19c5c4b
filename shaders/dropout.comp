#version 450
// dropout zeroes each element with probability p and scales the rest by
// 1/(1-p), with the mask of dropout.glsl for the seed p.seed.
// texel form
#define DRIVER_HALVES_OK // adds, multiplies or converts what it decodes (texels.glsl)
#include "ewise.glsl"
#include "det_extra.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform Push { uint n; uint seed; uint threshold; float scale; } p;
#if defined(TEXELS)
#include "texels.glsl"
layout(set = 0, binding = 0) uniform usamplerBuffer x;

DEFINE_TEX_LOADS(x, x, IN0_DT)
DEFINE_TEX_OUTPUT(1, Out, o, OUT_DT)
#else
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) writeonly buffer Out { uint o[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_STORE(o, o, OUT_DT)
#endif
#include "dropout.glsl"

void main() {
    uint h = pcg_hash(p.seed);
    DROPOUT_MAIN(h)
}
