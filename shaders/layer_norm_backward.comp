#version 450
// layer_norm_backward gives dx for each row from dy, x and the saved mean
// and rstd: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
// It also writes dy * xhat, whose column sums are the gamma gradient. Rows
// are reduced by segments of SEG invocations, as in layer_norm.
#include "reduce.glsl"

layout(constant_id = 4) const uint SEG = 0;

layout(push_constant) uniform Push { uint rows; uint cols; } p;
layout(set = 0, binding = 0) readonly buffer DY { float dy[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer G { float gamma[]; };
layout(set = 0, binding = 3) readonly buffer Stats { vec2 stats[]; };
layout(set = 0, binding = 4) writeonly buffer DX { float dx[]; };
layout(set = 0, binding = 5) writeonly buffer DYX { float dyx[]; };

DEFINE_TREE(tree_sum, ADD)

void main() {
    uint seg = SEG == 0u ? gl_WorkGroupSize.x : SEG;
    uint per = gl_WorkGroupSize.x / seg;
    uint t = gl_LocalInvocationID.x, lane = t % seg;
    for (uint base = gl_WorkGroupID.x * per; base < p.rows; base += gl_NumWorkGroups.x * per) {
        uint r = base + t / seg;
        bool live = r < p.rows;
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
