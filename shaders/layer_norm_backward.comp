#version 450
// layer_norm_backward gives dx for each row from dy, x and the saved mean
// and rstd: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
// It also writes dy * xhat, whose column sums are the gamma gradient. Rows
// are reduced by segments of SEG invocations, as in layer_norm.
#include "reduce.glsl"
#include "det.glsl"

layout(constant_id = 4) const uint SEG = 0;

layout(push_constant) uniform Push { uint rows; uint cols; } p;
layout(set = 0, binding = 0) readonly buffer DY { float dy[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer G { float gamma[]; };
layout(set = 0, binding = 3) readonly buffer Stats { vec2 stats[]; };
layout(set = 0, binding = 4) writeonly buffer DX { float dx[]; };
layout(set = 0, binding = 5) writeonly buffer DYX { float dyx[]; };

DEFINE_TREE(tree_sum, ADD)
DEFINE_TREE(det_tree_sum, det_add)

// det_row is main's work for row r on the deterministic path: the same
// formulas with det.glsl's operations.
void det_row(uint r, bool live, uint seg, uint lane) {
    uint lo = r * p.cols;
    vec2 st = live ? stats[r] : vec2(0.0);
    float sg = 0.0, sgx = 0.0;
    if (live) for (uint i = lane; i < p.cols; i += seg) {
        float xhat = det_mul(det_sub(x[lo + i], st.x), st.y);
        float g = det_mul(dy[lo + i], gamma[i]);
        sg = det_add(sg, g);
        sgx = det_mad(g, xhat, sgx);
        dyx[lo + i] = det_mul(dy[lo + i], xhat);
    }
    float n = float(p.cols);
    float mg = det_div(det_tree_sum(sg, seg), n);
    float mgx = det_div(det_tree_sum(sgx, seg), n);
    if (!live) return;
    for (uint i = lane; i < p.cols; i += seg) {
        float xhat = det_mul(det_sub(x[lo + i], st.x), st.y);
        dx[lo + i] = det_mul(st.y, det_sub(det_sub(det_mul(dy[lo + i], gamma[i]), mg), det_mul(xhat, mgx)));
    }
}

void main() {
    uint seg = SEG == 0u ? gl_WorkGroupSize.x : SEG;
    uint per = gl_WorkGroupSize.x / seg;
    uint t = gl_LocalInvocationID.x, lane = t % seg;
    for (uint base = gl_WorkGroupID.x * per; base < p.rows; base += gl_NumWorkGroups.x * per) {
        uint r = base + t / seg;
        bool live = r < p.rows;
        if (DETERMINISTIC) {
            det_row(r, live, seg, lane);
            continue;
        }
        uint lo = r * p.cols;
        vec2 st = live ? stats[r] : vec2(0.0);
        float sg = 0.0, sgx = 0.0;
        if (live) for (uint i = lane; i < p.cols; i += seg) {
            float xhat = (x[lo + i] - st.x) * st.y;
            float g = dy[lo + i] * gamma[i];
            sg += g;
            sgx += g * xhat;
            dyx[lo + i] = dy[lo + i] * xhat;
        }
        float mg = tree_sum(sg, seg) / float(p.cols);
        float mgx = tree_sum(sgx, seg) / float(p.cols);
        if (!live) continue;
        for (uint i = lane; i < p.cols; i += seg) {
            float xhat = (x[lo + i] - st.x) * st.y;
            dx[lo + i] = st.y * (dy[lo + i] * gamma[i] - mg - xhat * mgx);
        }
    }
}
