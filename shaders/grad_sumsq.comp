#version 450
// grad_sumsq is the first pass of a total gradient norm: per chunk of the
// fp32 tensors a block table locates, the sum of the squares of its
// elements, into partial[base + chunk]. One workgroup per chunk (a power of
// two invocations) and a fixed tree, so the same bits every run.
#include "reduce.glsl"
#include "det.glsl"

layout(push_constant) uniform Push { uint nchunks; uint base; } p;
layout(set = 0, binding = 0) readonly buffer Data { uint data[]; };
// Per chunk: first word, element count, dtype (always fp32 here), unused.
layout(set = 0, binding = 1) readonly buffer Table { uvec4 chunks[]; };
layout(set = 0, binding = 2) writeonly buffer Partial { float partial[]; };

DEFINE_TREE(tree, ADD)
DEFINE_TREE(det_tree, det_add)

void main() {
    uint c = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    float acc = 0.0;
    if (c < p.nchunks) {
        uvec4 e = chunks[c];
        for (uint i = gl_LocalInvocationIndex; i < e.y; i += gl_WorkGroupSize.x) {
            float v = uintBitsToFloat(data[e.x + i]);
            acc = DETERMINISTIC ? det_mad(v, v, acc) : acc + v * v;
        }
    }
    acc = DETERMINISTIC ? det_tree(acc, gl_WorkGroupSize.x) : tree(acc, gl_WorkGroupSize.x); // every invocation: the tree has barriers
    if (c < p.nchunks && gl_LocalInvocationIndex == 0u) partial[p.base + c] = acc;
}
