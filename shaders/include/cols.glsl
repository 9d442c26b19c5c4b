// Body of a reduction over a middle axis: x viewed as [outer, k, inner],
// y[o, i] = scale * COMB over j of x[o, j, i]. One invocation per output
// (two per invocation for a 16-bit OUT_DT, so that each word of y has one
// writer) loops serially over j: neighbouring invocations read
// neighbouring words, and the order is fixed. The including file defines
// COMB and IDENTITY.
#include "ewise.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
// OUT_DT: y's dtype; a 16-bit one is the fp32 result rounded once, as Cast
// would round it (a bias gradient under autocast, with no cast kernel).
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform ColsPush { uint outer; uint k; uint inner; float scale; } p;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { uint y[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_STORE(y, y, OUT_DT)

// col returns output o.
float col(uint o) {
    uint q = o / p.inner;
    uint i = q * p.k * p.inner + (o - q * p.inner);
    float acc = IDENTITY;
    for (uint j = 0u; j < p.k; j++, i += p.inner) acc = COMB(acc, det_in(x_at(i)));
    return DETERMINISTIC ? det_mul(acc, p.scale) : acc * p.scale;
}

void main() {
    uint n = p.outer * p.inner;
    if (dt_wide(OUT_DT)) {
        GRID_STRIDE(o, n) y[o] = floatBitsToUint(col(o));
        return;
    }
    GRID_STRIDE(w, (n + 1u) >> 1) {
        float hi = 2u * w + 1u < n ? col(2u * w + 1u) : 0.0;
        y_pair(w, n, vec2(col(2u * w), hi));
    }
}
