// Body of a reduction over a middle axis: x viewed as [outer, k, inner],
// y[o, i] = scale * COMB over j of x[o, j, i]. One invocation per output
// (two per invocation for a 16-bit OUT_DT, so that each word of y has one
// writer) loops serially over j: neighbouring invocations read
// neighbouring words, and the order is fixed. The including file defines
// COMB and IDENTITY.
// The texel form (CPU drivers, inner a multiple of 8) makes a block of 8
// outputs per invocation, reading each of their k rows as texels, the
// same operations in the same order: the same bits.
#include "ewise.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
// OUT_DT: y's dtype; a 16-bit one is the fp32 result rounded once, as Cast
// would round it (a bias gradient under autocast, with no cast kernel).
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform ColsPush { uint outer; uint k; uint inner; float scale; } p;

float scaled(float acc) { return DETERMINISTIC ? det_mul(acc, p.scale) : acc * p.scale; }

#if defined(TEXELS)
#include "texels.glsl"
layout(set = 0, binding = 0) uniform usamplerBuffer x;

DEFINE_TEX_LOADS(x, x, IN0_DT)
DEFINE_TEX_OUTPUT(1, Y, y, OUT_DT)

vec4 comb4(vec4 a, vec4 v) {
    return vec4(COMB(a.x, det_in(v.x)), COMB(a.y, det_in(v.y)), COMB(a.z, det_in(v.z)), COMB(a.w, det_in(v.w)));
}

// block makes outputs 8q..8q+7, which share o (inner is a multiple of 8).
void block(uint q) {
    uint e = 8u * q, o = e / p.inner;
    uint b = (o * p.k * p.inner + (e - o * p.inner)) / 8u; // x's block of row 0
    vec4 lo = vec4(IDENTITY), hi = vec4(IDENTITY);
    for (uint j = 0u; j < p.k; j++, b += p.inner / 8u) {
        vec4 a, c;
        x_oct(b, 0u, true, a, c);
        lo = comb4(lo, a);
        hi = comb4(hi, c);
    }
    y_oct(q, 0u, true, vec4(scaled(lo.x), scaled(lo.y), scaled(lo.z), scaled(lo.w)),
          vec4(scaled(hi.x), scaled(hi.y), scaled(hi.z), scaled(hi.w)));
}

void main() { SPAN_STRIDE(q, p.outer * p.inner / 8u) block(q); }
#else
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
    return scaled(acc);
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
#endif
