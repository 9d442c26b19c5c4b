#version 450
// gather is torch.gather over contiguous tensors: d has idx's shape
// (d0, ..., d7, padded in front with 1s), and element e of d, at index
// (i0, ..., i7), is x at the same index except along `axis`, where it is
// idx[e]: x[sum_{k != axis} ik*sk + idx[e]*s_axis]. An index outside
// [0, bound) gives quiet NaN and raises the device's assert with e for its
// row, as index_select does. x's dtype IN0_DT is a
// floating one; elements are copied as bits. Each invocation makes one word
// of d, so a 16-bit word has one writer.
#define ASSERT_BINDING 3
#include "common.glsl"
#include "dtype.glsl"
#include "assert.glsl"

#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform GatherPush {
    uint n;     // elements of d
    uint axis;  // the gathered axis, in the padded 8 dimensions
    uint bound; // x's length along axis
    uint d0, d1, d2, d3, d4, d5, d6, d7; // d's (idx's) shape
    uint s0, s1, s2, s3, s4, s5, s6, s7; // x's strides in elements
} p;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) readonly buffer Idx { uint idx[]; };
layout(set = 0, binding = 2) writeonly buffer D { uint d[]; };

uint nan_bits() {
    if (IN0_DT == DT_F16) return 0x7E00u;
    if (IN0_DT == DT_BF16) return 0x7FC0u;
    return 0x7FC00000u;
}

// elem returns the bits of element e of d.
uint elem(uint e) {
    uint dims[8] = uint[8](p.d0, p.d1, p.d2, p.d3, p.d4, p.d5, p.d6, p.d7);
    uint strides[8] = uint[8](p.s0, p.s1, p.s2, p.s3, p.s4, p.s5, p.s6, p.s7);
    uint j = idx[e]; // a negative index is a huge uint: out of range too
    if (j >= p.bound) {
        raise_assert(e, j, p.bound);
        return nan_bits();
    }
    uint off = 0u, r = e;
    [[unroll]] for (int k = 7; k >= 0; k--) {
        uint i = r % dims[k];
        r /= dims[k];
        off += (uint(k) == p.axis ? j : i) * strides[k];
    }
    if (dt_wide(IN0_DT)) return x[off];
    return (x[off >> 1] >> ((off & 1u) * 16u)) & 0xFFFFu;
}

void main() {
    GRID_STRIDE(w, dt_wide(IN0_DT) ? p.n : (p.n + 1u) / 2u) {
        if (dt_wide(IN0_DT)) {
            d[w] = elem(w);
            continue;
        }
        uint e = 2u * w;
        uint hi = e + 1u < p.n ? elem(e + 1u) : 0u;
        d[w] = elem(e) | (hi << 16);
    }
}
