// Body of a broadcasting binary kernel: dst = OP(a, b), a and b broadcast to
// the output's shape (broadcast.glsl). The including file defines OP(a, b).
#include "broadcast.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 2) const uint IN1_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) readonly buffer B { uint b[]; };
layout(set = 0, binding = 2) writeonly buffer D { uint d[]; };

DEFINE_LOADS(a, a, IN0_DT)
DEFINE_LOADS(b, b, IN1_DT)
DEFINE_STORE(d, d, OUT_DT)

float bc_one(uint i) {
    uvec3 o = bc_offsets(i);
    return OP(a_at(o.x), b_at(o.y));
}

BC_MAIN(bc_one)
