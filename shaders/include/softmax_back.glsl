// Body of a row-wise softmax backward over the last axis, a segment of the
// workgroup per row, from the forward's output y and the upstream gradient
// dy (any float dtypes, constants 1 and 2): the row sum s of TERM(y, dy),
// then the fp32 gradient OUT(y, dy, s), both defined by the including file.
#include "reduce.glsl"
#include "det_extra.glsl"

// ACC(s, y, dy) is s + TERM(y, dy), unless the including file defines it.
#ifndef ACC
#define ACC(s, y, g) ((s) + TERM(y, g))
#endif

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 2) const uint IN1_DT = DT_F32;

layout(push_constant) uniform SoftmaxPush { uint rows; uint cols; uint seg; } p;
layout(set = 0, binding = 0) readonly buffer Y { uint y[]; };
layout(set = 0, binding = 1) readonly buffer Dy { uint dy[]; };
layout(set = 0, binding = 2) writeonly buffer Dx { float dx[]; };

DEFINE_LOADS(y, y, IN0_DT)
DEFINE_LOADS(dy, dy, IN1_DT)
DEFINE_TREE(tree_sum, ADD)

void main() {
    uint t = gl_LocalInvocationID.x;
    uint per = gl_WorkGroupSize.x / p.seg;
    uint lane = t & (p.seg - 1u);
    uint groups = (p.rows + per - 1u) / per;
    for (uint g = gl_WorkGroupID.x; g < groups; g += gl_NumWorkGroups.x) {
        uint row = g * per + t / p.seg;
        bool ok = row < p.rows;
        uint lo = row * p.cols;
        float s = 0.0;
        if (ok) for (uint i = lane; i < p.cols; i += p.seg) s = ACC(s, y_at(lo + i), dy_at(lo + i));
        s = tree_sum(s, p.seg);
        if (ok) for (uint i = lane; i < p.cols; i += p.seg) dx[lo + i] = OUT(y_at(lo + i), dy_at(lo + i), s);
    }
}
