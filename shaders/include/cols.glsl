// Body of a reduction over a middle axis: x viewed as [outer, k, inner],
// y[o, i] = scale * COMB over j of x[o, j, i]. One invocation per output
// loops serially over j: neighbouring invocations read neighbouring words,
// and the order is fixed. The including file defines COMB and IDENTITY.
#include "ewise.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform ColsPush { uint outer; uint k; uint inner; float scale; } p;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };

DEFINE_LOADS(x, x, IN0_DT)

void main() {
    GRID_STRIDE(o, p.outer * p.inner) {
        uint q = o / p.inner;
        uint i = q * p.k * p.inner + (o - q * p.inner);
        float acc = IDENTITY;
        for (uint j = 0u; j < p.k; j++, i += p.inner) acc = COMB(acc, det_in(x_at(i)));
        y[o] = DETERMINISTIC ? det_mul(acc, p.scale) : acc * p.scale;
    }
}
