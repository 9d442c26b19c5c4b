#version 450
// layer_norm normalises each row of x over its last axis, in fp32:
// y = (x - mean) * rstd * gamma + beta, rstd = 1/sqrt(var + eps), and saves
// mean and rstd per row for the backward pass. One workgroup per row.
// NO_BETA leaves beta out (LayerNorm without bias; B is then not read).
#include "reduce.glsl"

layout(constant_id = 1) const bool NO_BETA = false;

layout(push_constant) uniform Push { uint rows; uint cols; float eps; } p;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer G { float gamma[]; };
layout(set = 0, binding = 2) readonly buffer B { float beta[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 4) writeonly buffer Stats { vec2 stats[]; };

DEFINE_TREE(tree_sum, ADD)

void main() {
    uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
    for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
        uint lo = r * p.cols;
        float s = 0.0;
        for (uint i = t; i < p.cols; i += n) s += x[lo + i];
        float mean = tree_sum(s, n) / float(p.cols);
        float q = 0.0;
        for (uint i = t; i < p.cols; i += n) { float d = x[lo + i] - mean; q += d * d; }
        float rstd = inversesqrt(tree_sum(q, n) / float(p.cols) + p.eps);
        for (uint i = t; i < p.cols; i += n) y[lo + i] = (x[lo + i] - mean) * rstd * gamma[i] + (NO_BETA ? 0.0 : beta[i]);
        if (t == 0u) stats[r] = vec2(mean, rstd);
    }
}
