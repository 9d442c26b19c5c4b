#version 450
// embedding_backward sums the rows of dy [n, cols] into dw [vocab, cols] by
// int32 indices: dw[v, c] (+)= sum over i in [i0, i1) with idx[i] == v of
// dy[i, c], in fp32. Deterministic: no atomics; each output element has one
// writer, which visits the indices in order (the runtime splits long index
// lists into dispatches run in order, the later ones adding with ACC). A
// workgroup covers columns of one vocabulary row, so the index test is the
// same for all its invocations: rows that do not match cost a uniform branch.
// An index outside [0, vocab) matches no row.
#include "common.glsl"
#include "dtype.glsl"

layout(constant_id = 1) const uint DY_DT = DT_F32;

layout(push_constant) uniform Push { uint i0; uint i1; uint cols; uint vocab; uint acc; } p;
layout(set = 0, binding = 0) readonly buffer Idx { uint idx[]; };
layout(set = 0, binding = 1) readonly buffer DY { uint dy[]; };
layout(set = 0, binding = 2) buffer DW { float dw[]; };

float dy_at(uint e) {
    if (DY_DT == DT_F32) return uintBitsToFloat(dy[e]);
    return half_to_f32(dy[e >> 1] >> ((e & 1u) * 16u), DY_DT);
}

void main() {
    uint c = gl_GlobalInvocationID.x;
    if (c >= p.cols) return;
    for (uint v = gl_WorkGroupID.y; v < p.vocab; v += gl_NumWorkGroups.y) {
        float s = p.acc != 0u ? dw[v * p.cols + c] : 0.0;
        for (uint i = p.i0; i < p.i1; i++) {
            if (idx[i] == v) s += dy_at(i * p.cols + c);
        }
        dw[v * p.cols + c] = s;
    }
}
