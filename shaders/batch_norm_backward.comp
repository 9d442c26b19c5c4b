#version 450
// batch_norm_backward gives dx, dgamma and dbeta of batch_norm per channel
// from dy, x and the saved mean and rstd, one workgroup per channel:
// dbeta = sum(dy), dgamma = sum(dy * xhat), and in training (batch
// statistics) dx = gamma * rstd * (dy - dbeta/M - xhat * dgamma/M), M = N*S;
// with fixed (running) statistics dx = gamma * rstd * dy.
#include "reduce.glsl"
#include "det.glsl"

layout(push_constant) uniform Push { uint n; uint c; uint s; uint train; } p;
layout(set = 0, binding = 0) readonly buffer DY { float dy[]; };
layout(set = 0, binding = 1) readonly buffer X { float x[]; };
layout(set = 0, binding = 2) readonly buffer G { float gamma[]; };
layout(set = 0, binding = 3) readonly buffer Stats { vec2 stats[]; };
layout(set = 0, binding = 4) writeonly buffer DX { float dx[]; };
layout(set = 0, binding = 5) writeonly buffer DG { float dgamma[]; };
layout(set = 0, binding = 6) writeonly buffer DB { float dbeta[]; };

DEFINE_TREE(tree_sum, ADD)

uint at(uint c, uint e) {
    uint b = e / p.s;
    return (b * p.c + c) * p.s + (e - b * p.s);
}

DEFINE_TREE(det_tree_sum, det_add)

// det_channel is main's work for channel c on the deterministic path: the
// same formulas with det.glsl's operations.
void det_channel(uint c, uint t, uint nt, uint m) {
    vec2 st = stats[c];
    float sd = 0.0, sdx = 0.0;
    for (uint e = t; e < m; e += nt) {
        uint i = at(c, e);
        sd = det_add(sd, dy[i]);
        sdx = det_add(sdx, det_mul(det_mul(dy[i], det_sub(x[i], st.x)), st.y));
    }
    sd = det_tree_sum(sd, nt);
    sdx = det_tree_sum(sdx, nt);
    float k = det_mul(gamma[c], st.y);
    float md = p.train != 0u ? det_div(sd, float(m)) : 0.0;
    float mdx = p.train != 0u ? det_div(sdx, float(m)) : 0.0;
    for (uint e = t; e < m; e += nt) {
        uint i = at(c, e);
        dx[i] = det_mul(k, det_sub(det_sub(dy[i], md), det_mul(det_mul(det_sub(x[i], st.x), st.y), mdx)));
    }
    if (t == 0u) { dgamma[c] = sdx; dbeta[c] = sd; }
}

void main() {
    uint t = gl_LocalInvocationID.x, nt = gl_WorkGroupSize.x;
    uint m = p.n * p.s;
    for (uint c = gl_WorkGroupID.x; c < p.c; c += gl_NumWorkGroups.x) {
        if (DETERMINISTIC) {
            det_channel(c, t, nt, m);
            continue;
        }
        vec2 st = stats[c];
        float sd = 0.0, sdx = 0.0;
        for (uint e = t; e < m; e += nt) {
            uint i = at(c, e);
            sd += dy[i];
            sdx += dy[i] * (x[i] - st.x) * st.y;
        }
        sd = tree_sum(sd, nt);
        sdx = tree_sum(sdx, nt);
        float k = gamma[c] * st.y;
        float md = p.train != 0u ? sd / float(m) : 0.0;
        float mdx = p.train != 0u ? sdx / float(m) : 0.0;
        for (uint e = t; e < m; e += nt) {
            uint i = at(c, e);
            dx[i] = k * (dy[i] - md - (x[i] - st.x) * st.y * mdx);
        }
        if (t == 0u) { dgamma[c] = sdx; dbeta[c] = sd; }
    }
}
