#version 450
// layer_norm normalises each row of x over its last axis, in fp32:
// y = (x - mean) * rstd * gamma + beta, rstd = 1/sqrt(var + eps), and saves
// mean and rstd per row for the backward pass. Each row is reduced by a
// segment of SEG invocations (0: the whole workgroup): a GPU spreads a row
// over many invocations, a CPU driver gives each invocation whole rows,
// since its barriers cost far more than a row's loop.
// NO_BETA leaves beta out (LayerNorm without bias; B is then not read).
#include "reduce.glsl"
#include "det.glsl"

layout(constant_id = 1) const bool NO_BETA = false;
layout(constant_id = 4) const uint SEG = 0;

layout(push_constant) uniform Push { uint rows; uint cols; float eps; } p;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer G { float gamma[]; };
layout(set = 0, binding = 2) readonly buffer B { float beta[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 4) writeonly buffer Stats { vec2 stats[]; };

DEFINE_TREE(tree_sum, ADD)
DEFINE_TREE(det_tree_sum, det_add)

// det_row is main's work for row r on the deterministic path: the same
// formulas with det.glsl's operations (the tree's shape is fixed by the
// runtime's workgroup and segment).
void det_row(uint r, bool live, uint seg, uint lane) {
    uint lo = r * p.cols;
    float n = float(p.cols);
    float s = 0.0;
    if (live) for (uint i = lane; i < p.cols; i += seg) s = det_add(s, x[lo + i]);
    float mean = det_div(det_tree_sum(s, seg), n);
    float q = 0.0;
    if (live) for (uint i = lane; i < p.cols; i += seg) { float d = det_sub(x[lo + i], mean); q = det_mad(d, d, q); }
    float rstd = det_rsqrt(det_add(det_div(det_tree_sum(q, seg), n), p.eps));
    if (!live) return;
    for (uint i = lane; i < p.cols; i += seg)
        y[lo + i] = det_mad(det_mul(det_sub(x[lo + i], mean), rstd), gamma[i], NO_BETA ? 0.0 : beta[i]);
    if (lane == 0u) stats[r] = vec2(mean, rstd);
}

void main() {
    uint seg = SEG == 0u ? gl_WorkGroupSize.x : SEG;
    uint per = gl_WorkGroupSize.x / seg; // rows per workgroup at a time
    uint t = gl_LocalInvocationID.x, lane = t % seg;
    // The loop bound is the same for the whole workgroup, so that every
    // invocation reaches the trees' barriers.
    for (uint base = gl_WorkGroupID.x * per; base < p.rows; base += gl_NumWorkGroups.x * per) {
        uint r = base + t / seg;
        bool live = r < p.rows;
        if (DETERMINISTIC) {
            det_row(r, live, seg, lane);
            continue;
        }
        uint lo = r * p.cols;
        float s = 0.0;
        if (live) for (uint i = lane; i < p.cols; i += seg) s += x[lo + i];
        float mean = tree_sum(s, seg) / float(p.cols);
        float q = 0.0;
        if (live) for (uint i = lane; i < p.cols; i += seg) { float d = x[lo + i] - mean; q += d * d; }
        float rstd = inversesqrt(tree_sum(q, seg) / float(p.cols) + p.eps);
        if (!live) continue;
        for (uint i = lane; i < p.cols; i += seg) y[lo + i] = (x[lo + i] - mean) * rstd * gamma[i] + (NO_BETA ? 0.0 : beta[i]);
        if (lane == 0u) stats[r] = vec2(mean, rstd);
    }
}
