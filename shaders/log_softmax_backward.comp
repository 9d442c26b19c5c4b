#version 450
// log_softmax_backward gives dx = dy - exp(y) * sum(dy) for each row, from
// the upstream gradient dy and the output y of log_softmax, in fp32. One
// workgroup per row.
#include "reduce.glsl"

layout(push_constant) uniform Push { uint rows; uint cols; } p;
layout(set = 0, binding = 0) readonly buffer DY { float dy[]; };
layout(set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(set = 0, binding = 2) writeonly buffer DX { float dx[]; };

DEFINE_TREE(tree_sum, ADD)

void main() {
    uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
    for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
        uint lo = r * p.cols;
        float s = 0.0;
        for (uint i = t; i < p.cols; i += n) s += dy[lo + i];
        s = tree_sum(s, n);
        for (uint i = t; i < p.cols; i += n) dx[lo + i] = dy[lo + i] - exp(y[lo + i]) * s;
    }
}
