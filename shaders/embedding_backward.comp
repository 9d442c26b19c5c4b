#version 450
// embedding_backward sums the rows of dy [n, cols] into dw [vocab, cols] by
// int32 indices: dw[v, c] (+)= sum over i in [i0, i1) with idx[i] == v of
// dy[i, c], in fp32. Deterministic: no atomics; each output element has one
// writer, which adds the matching rows in index order (the runtime splits
// long index lists into dispatches run in order, the later ones adding with
// acc). A workgroup covers columns of one vocabulary row; it tests the
// indices a chunk at a time, one per invocation, and its first invocation
// lists the chunk's matches in order in shared memory, so only matching rows
// cost the column loop (testing every index in every invocation made the
// cost vocab * n * cols). An index outside [0, vocab) has no row to go to:
// every workgroup sees it, so it makes the whole of dw NaN (a gradient
// scaler then skips the step) and raises the device's assert once.
#define ASSERT_BINDING 3
#include "common.glsl"
#include "dtype.glsl"
#include "det.glsl"
#include "assert.glsl"

layout(constant_id = 1) const uint DY_DT = DT_F32;

layout(push_constant) uniform Push { uint i0; uint i1; uint cols; uint vocab; uint acc; } p;
layout(set = 0, binding = 0) readonly buffer Idx { uint idx[]; };
layout(set = 0, binding = 1) readonly buffer DY { uint dy[]; };
layout(set = 0, binding = 2) buffer DW { float dw[]; };

// The largest workgroup the runtime uses (kernels.LocalSize's cap).
#define MAX_WG 256u
shared bool hit[MAX_WG];
shared uint list[MAX_WG];
shared uint count;
shared bool bad; // an index of [i0, i1) lies outside [0, vocab); only ever set

float dy_at(uint e) {
    if (DY_DT == DT_F32) return uintBitsToFloat(dy[e]);
    return half_to_f32(dy[e >> 1] >> ((e & 1u) * 16u), DY_DT);
}

void main() {
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    uint c = gl_GlobalInvocationID.x;
    bool live = c < p.cols;
    if (lid == 0u) bad = false;
    barrier();
    for (uint v = gl_WorkGroupID.y; v < p.vocab; v += gl_NumWorkGroups.y) {
        float s = live && p.acc != 0u ? dw[v * p.cols + c] : 0.0;
        for (uint b = p.i0; b < p.i1; b += wg) {
            barrier(); // the last chunk's list is consumed
            uint i = b + lid;
            bool in_list = i < p.i1;
            uint id = 0u;
            if (in_list) id = idx[i]; // a branch, not a ternary: no read past the list
            hit[lid] = in_list && id == v;
            if (in_list && id >= p.vocab) { // a negative index is a huge uint
                bad = true;
                if (v == 0u && gl_WorkGroupID.x == 0u) raise_assert(i, id, p.vocab); // from one workgroup
            }
            barrier();
            if (lid == 0u) {
                uint k = 0u;
                for (uint j = 0u; j < wg; j++) {
                    if (hit[j]) {
                        list[k] = b + j;
                        k++;
                    }
                }
                count = k;
            }
            barrier();
            if (live) {
                for (uint k = 0u; k < count; k++) s = DETERMINISTIC ? det_add(s, dy_at(list[k] * p.cols + c)) : s + dy_at(list[k] * p.cols + c);
            }
        }
        if (live) dw[v * p.cols + c] = bad ? uintBitsToFloat(0x7FC00000u) : s;
    }
}
