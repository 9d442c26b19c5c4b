#version 450
// clip_coef is the second pass of gradient clipping by norm, in one
// workgroup: norm = sqrt of the sum of the n partial sums of squares, and
// coef = min(1, max_norm / (norm + eps)) as PyTorch's clip_grad_norm_
// computes it, NaN staying NaN (an inf norm gives coef 0, and inf * 0 keeps
// the gradient non-finite). A fixed tree, so the same bits every run.
#include "reduce.glsl"
#include "det.glsl"

layout(push_constant) uniform Push { uint n; float max_norm; float eps; } p;
layout(set = 0, binding = 0) readonly buffer Partial { float partial[]; };
layout(set = 0, binding = 1) writeonly buffer Norm { float norm[]; };
layout(set = 0, binding = 2) writeonly buffer Coef { float coef[]; };

DEFINE_TREE(tree, ADD)
DEFINE_TREE(det_tree, det_add)

void main() {
    float acc = 0.0;
    for (uint i = gl_LocalInvocationIndex; i < p.n; i += gl_WorkGroupSize.x) acc = DETERMINISTIC ? det_add(acc, partial[i]) : acc + partial[i];
    acc = DETERMINISTIC ? det_tree(acc, gl_WorkGroupSize.x) : tree(acc, gl_WorkGroupSize.x);
    if (gl_LocalInvocationIndex == 0u) {
        // Specials by their bits: drivers differ on sqrt and min of them.
        float t = acc;
        if (!is_nan(acc) && floatBitsToUint(acc) != 0x7F800000u) t = DETERMINISTIC ? det_sqrt(acc) : sqrt(acc);
        float c;
        if (is_nan(t)) c = t;
        else if (floatBitsToUint(t) == 0x7F800000u) c = 0.0;
        else if (DETERMINISTIC) c = min(det_div(p.max_norm, det_add(t, p.eps)), 1.0);
        else c = min(p.max_norm / (t + p.eps), 1.0);
        norm[0] = t;
        coef[0] = c;
    }
}
