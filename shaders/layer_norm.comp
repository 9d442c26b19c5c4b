#version 450
// layer_norm normalises each row of x over its last axis, in fp32:
// y = (x - mean) * rstd * gamma + beta, rstd = 1/sqrt(var + eps), and saves
// mean and rstd per row for the backward pass. Each row is reduced by a
// segment of SEG invocations (0: the whole workgroup): a GPU spreads a row
// over many invocations, a CPU driver gives each invocation whole rows,
// since its barriers cost far more than a row's loop.
// NO_BETA leaves beta out (LayerNorm without bias; B is then not read).
#include "reduce.glsl"
#include "det_norm.glsl"

layout(constant_id = 1) const bool NO_BETA = false;
layout(constant_id = 4) const uint SEG = 0;

layout(push_constant) uniform Push { uint rows; uint cols; float eps; } p;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer G { float gamma[]; };
layout(set = 0, binding = 2) readonly buffer B { float beta[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 4) writeonly buffer Stats { vec2 stats[]; };

DEFINE_TREE(tree_sum, ADD)

// det_row is main's work for row r on the deterministic path, in one
// invocation (det_norm.glsl's order; the host runs SEG 1 in this mode).
float det_x(uint i) { return det_ftz(x[i]); }
void det_row(uint r) {
    uint lo = r * p.cols, c4 = p.cols & ~3u;
    vec4 s = vec4(0.0);
    for (uint i = 0u; i < c4; i += 4u) s = det_acc4(s, vec4(det_x(lo + i), det_x(lo + i + 1u), det_x(lo + i + 2u), det_x(lo + i + 3u)));
    if (c4 < p.cols) s.x = det_add(s.x, det_x(lo + c4));
    if (c4 + 1u < p.cols) s.y = det_add(s.y, det_x(lo + c4 + 1u));
    if (c4 + 2u < p.cols) s.z = det_add(s.z, det_x(lo + c4 + 2u));
    float n = float(p.cols);
    float mean = det_div(det_sum4(s), n);
    vec4 q = vec4(0.0);
    for (uint i = 0u; i < c4; i += 4u) q = det_sq4(q, vec4(det_x(lo + i), det_x(lo + i + 1u), det_x(lo + i + 2u), det_x(lo + i + 3u)), mean);
    if (c4 < p.cols) q.x = det_sq(q.x, det_x(lo + c4), mean);
    if (c4 + 1u < p.cols) q.y = det_sq(q.y, det_x(lo + c4 + 1u), mean);
    if (c4 + 2u < p.cols) q.z = det_sq(q.z, det_x(lo + c4 + 2u), mean);
    float rstd = det_rsqrt(det_add(det_div(det_sum4(q), n), det_ftz(p.eps)));
    for (uint i = 0u; i < p.cols; i++)
        y[lo + i] = det_norm(det_x(lo + i), mean, rstd, det_ftz(gamma[i]), NO_BETA ? 0.0 : det_ftz(beta[i]));
    stats[r] = vec2(mean, rstd);
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
            if (live && lane == 0u) det_row(r);
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
