#version 450
// gather_backward is the gradient of gather: dx has x's shape (x0..x7,
// padded in front with 1s) and each element is the sum of the elements of
// dy (idx's shape, i0..i7) that gather took from it: dx at index
// (j0, ..., j7) sums dy at (j0, ..., t, ..., j7), t along `axis` below
// len, where idx there is j_axis. One invocation per element of dx, in a
// fixed order: no atomics, the same bits every run. An index out of range
// (NaN in the forward) has nowhere to go: it makes its whole line of dx
// (every element that scans it) NaN, so that a gradient scaler sees it, and
// raises the device's assert with its offset in idx for the row. dy's dtype
// is IN0_DT; dx is fp32.
#define ASSERT_BINDING 3
#include "ewise.glsl"
#include "assert.glsl"

#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform GatherBackwardPush {
    uint n;    // elements of dx
    uint axis; // the gathered axis, in the padded 8 dimensions
    uint len;  // idx's length along axis
    uint x0, x1, x2, x3, x4, x5, x6, x7; // x's shape
    uint i0, i1, i2, i3, i4, i5, i6, i7; // idx's shape
} p;
layout(set = 0, binding = 0) readonly buffer Dy { uint dy[]; };
layout(set = 0, binding = 1) readonly buffer Idx { uint idx[]; };
layout(set = 0, binding = 2) writeonly buffer Dx { float dx[]; };

DEFINE_LOADS(dy, dy, IN0_DT)

void main() {
    uint xs[8] = uint[8](p.x0, p.x1, p.x2, p.x3, p.x4, p.x5, p.x6, p.x7);
    uint is[8] = uint[8](p.i0, p.i1, p.i2, p.i3, p.i4, p.i5, p.i6, p.i7);
    GRID_STRIDE(e, p.n) {
        // The offset in idx of (j0, ..., 0, ..., j7), and idx's stride
        // along axis; out stays false when j lies outside idx's shape.
        uint r = e, off = 0u, st = 1u, step = 0u, j = 0u, bound = 1u;
        bool outside = false;
        [[unroll]] for (int k = 7; k >= 0; k--) {
            uint i = r % xs[k];
            r /= xs[k];
            if (uint(k) == p.axis) {
                j = i;
                step = st;
                bound = xs[k];
            } else {
                if (i >= is[k]) outside = true;
                off += i * st;
            }
            st *= is[k];
        }
        float s = 0.0;
        bool bad = false;
        if (!outside) {
            for (uint t = 0u; t < p.len; t++) {
                uint o = off + t * step;
                uint k = idx[o]; // a negative index is a huge uint: out of range too
                if (k == j) s += dy_at(o);
                else if (k >= bound) {
                    bad = true;
                    if (j == 0u) raise_assert(o, k, bound); // once per line
                }
            }
        }
        dx[e] = bad ? uintBitsToFloat(0x7FC00000u) : s;
    }
}
