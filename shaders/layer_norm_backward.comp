#version 450
// layer_norm_backward gives dx for each row from dy, x and the saved mean
// and rstd: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.
// It also writes dy * xhat, whose column sums are the gamma gradient.
#include "reduce.glsl"

layout(push_constant) uniform Push { uint rows; uint cols; } p;
layout(set = 0, binding = 0) readonly buffer DY { float dy[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer G { float gamma[]; };
layout(set = 0, binding = 3) readonly buffer Stats { vec2 stats[]; };
layout(set = 0, binding = 4) writeonly buffer DX { float dx[]; };
layout(set = 0, binding = 5) writeonly buffer DYX { float dyx[]; };

DEFINE_TREE(tree_sum, ADD)

void main() {
    uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
    for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
        uint lo = r * p.cols;
        vec2 st = stats[r];
        float sg = 0.0, sgx = 0.0;
        for (uint i = t; i < p.cols; i += n) {
            float xhat = (x[lo + i] - st.x) * st.y;
            float g = dy[lo + i] * gamma[i];
            sg += g;
            sgx += g * xhat;
            dyx[lo + i] = dy[lo + i] * xhat;
        }
        float mg = tree_sum(sg, n) / float(p.cols);
        float mgx = tree_sum(sgx, n) / float(p.cols);
        for (uint i = t; i < p.cols; i += n) {
            float xhat = (x[lo + i] - st.x) * st.y;
            dx[lo + i] = st.y * (dy[lo + i] * gamma[i] - mg - xhat * mgx);
        }
    }
}
