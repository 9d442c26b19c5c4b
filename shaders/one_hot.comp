#version 450
// one_hot: d[r, c] = (idx[r] == c) for n = len(idx)*classes elements, in
// dtype OUT_DT: 1 and 0 for Int32, 1.0 and 0.0 for a floating one. An index
// outside [0, classes) gives a row of quiet NaN (of -1 for Int32, which no
// one-hot row holds) and raises the device's assert (assert.glsl), as
// index_select does. Each invocation makes two consecutive elements, so a
// 16-bit output word has one writer.
#define ASSERT_BINDING 2
#include "common.glsl"
#include "dtype.glsl"
#include "assert.glsl"

layout(constant_id = 3) const uint OUT_DT = DT_F32; // DT_F32: a zero Go field means the default

layout(push_constant) uniform Push { uint n; uint classes; } p;
layout(set = 0, binding = 0) readonly buffer Idx { uint idx[]; };
layout(set = 0, binding = 1) writeonly buffer D { uint d[]; };

// bits of 1, and of the bad row's value, in dtype OUT_DT.
uint one_bits() {
    if (OUT_DT == DT_I32) return 1u;
    if (OUT_DT == DT_F16) return 0x3C00u;
    if (OUT_DT == DT_BF16) return 0x3F80u;
    return 0x3F800000u;
}
uint bad_bits() {
    if (OUT_DT == DT_I32) return 0xFFFFFFFFu;
    if (OUT_DT == DT_F16) return 0x7E00u;
    if (OUT_DT == DT_BF16) return 0x7FC0u;
    return 0x7FC00000u;
}

// elem returns the bits of output element e.
uint elem(uint e) {
    uint r = e / p.classes;
    uint c = e - r * p.classes;
    uint j = idx[r]; // a negative index is a huge uint: out of range too
    if (j >= p.classes) {
        if (c == 0u) raise_assert(r, j, p.classes); // once per row
        return bad_bits();
    }
    return j == c ? one_bits() : 0u;
}

void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        uint e = 2u * w;
        bool two = e + 1u < p.n;
        if (dt_wide(OUT_DT)) {
            d[e] = elem(e);
            if (two) d[e + 1u] = elem(e + 1u);
        } else {
            uint hi = two ? elem(e + 1u) : 0u;
            d[w] = elem(e) | (hi << 16);
        }
    }
}
