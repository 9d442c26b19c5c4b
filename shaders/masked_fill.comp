#version 450
// masked_fill: dst = mask != 0 ? alpha : x, the int32 mask broadcast to x's
// shape (offsets: x .x, mask .y).
#include "broadcast.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) readonly buffer Mask { uint mask[]; };
layout(set = 0, binding = 2) writeonly buffer D { uint d[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_STORE(d, d, OUT_DT)

float fill_one(uint i) {
    uvec3 o = bc_offsets(i);
    return mask[o.y] != 0u ? p.alpha : x_at(o.x);
}

BC_MAIN(fill_one)
