#version 450
// index_select picks rows of x, viewed as [rows, cols], by int32 indices:
// d[r, c] = x[idx[r], c] for the n = len(idx)*cols output elements. An index
// outside [0, rows) gives a row of quiet NaN and raises the device's assert
// (assert.glsl), so a bad index neither reads other memory nor passes
// unnoticed. The output has x's dtype (code
// IN0_DT, a floating one), so elements are copied as bits, unchanged. Each
// invocation makes two consecutive elements, so a 16-bit output word has one
// writer.
#define ASSERT_BINDING 3
#include "common.glsl"
#include "dtype.glsl"
#include "assert.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform Push { uint n; uint cols; uint rows; } p;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) readonly buffer Idx { uint idx[]; };
layout(set = 0, binding = 2) writeonly buffer D { uint d[]; };

// nan_bits is a quiet NaN of dtype IN0_DT.
uint nan_bits() {
    if (IN0_DT == DT_F16) return 0x7E00u;
    if (IN0_DT == DT_BF16) return 0x7FC0u;
    return 0x7FC00000u;
}

// elem returns the bits of output element e.
uint elem(uint e) {
    uint r = e / p.cols;
    uint j = idx[r]; // a negative index is a huge uint: out of range too
    uint c = e - r * p.cols;
    if (j >= p.rows) {
        if (c == 0u) raise_assert(r, j, p.rows); // once per row
        return nan_bits();
    }
    uint i = j * p.cols + c;
    if (dt_wide(IN0_DT)) return x[i];
    return (x[i >> 1] >> ((i & 1u) * 16u)) & 0xFFFFu;
}

void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        uint e = 2u * w;
        bool two = e + 1u < p.n;
        if (dt_wide(IN0_DT)) {
            d[e] = elem(e);
            if (two) d[e + 1u] = elem(e + 1u);
        } else {
            uint hi = two ? elem(e + 1u) : 0u;
            d[w] = elem(e) | (hi << 16);
        }
    }
}
