#version 450
// index_select_tex is index_select's texel form for CPU drivers, for rows
// of whole 16-byte texels: x is read as texels (one SIMD gather where a
// storage load is a loop over the lanes) and each invocation copies a
// texel of the output, stored as two 64-bit words (texels.glsl). Bits are
// copied unchanged; an index outside [0, rows) gives a row of quiet NaN
// and raises the device's assert, as in index_select.
#define TEXELS
#define ASSERT_BINDING 3
#include "common.glsl"
#include "dtype.glsl"
#include "assert.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;

// n: the output's texels; cols: texels per row; rows: x's rows.
layout(push_constant) uniform Push { uint n; uint cols; uint rows; } p;
layout(set = 0, binding = 0) uniform usamplerBuffer x;
layout(set = 0, binding = 1) readonly buffer Idx { uint idx[]; };
layout(set = 0, binding = 2) writeonly buffer D { u64vec2 d[]; };

// nan_word is a word of quiet NaNs of dtype IN0_DT.
uint nan_word() {
    if (IN0_DT == DT_F16) return 0x7E007E00u;
    if (IN0_DT == DT_BF16) return 0x7FC07FC0u;
    return 0x7FC00000u;
}

void main() {
    GRID_STRIDE(q, p.n) {
        uint r = q / p.cols;
        uint j = idx[r]; // a negative index is a huge uint: out of range too
        uint c = q - r * p.cols;
        uvec4 t = uvec4(nan_word());
        if (j < p.rows) t = texelFetch(x, int(j * p.cols + c));
        else if (c == 0u) raise_assert(r, j, p.rows); // once per row
        d[q] = wide2(t);
    }
}
