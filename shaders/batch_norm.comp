#version 450
// batch_norm normalises x [N, C, S] (S the spatial elements) per channel c,
// in fp32: y = (x - mean) * rstd * gamma[c] + beta[c], one workgroup per
// channel. mode 0: the batch's mean and biased variance, saved with rstd in
// stats[c]; mode 1: the same, and the running statistics updated in place
// with the momentum, from the unbiased variance (PyTorch's), and count[0]
// (num_batches_tracked) incremented; mode 2 (eval): the running statistics,
// rstd = 1/sqrt(running_var + eps), saved in stats[c] as well.
#include "reduce.glsl"
#include "det.glsl"

layout(push_constant) uniform Push { uint n; uint c; uint s; float eps; float momentum; uint mode; } p;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer G { float gamma[]; };
layout(set = 0, binding = 2) readonly buffer B { float beta[]; };
layout(set = 0, binding = 3) writeonly buffer Y { float y[]; };
layout(set = 0, binding = 4) writeonly buffer Stats { vec2 stats[]; };
layout(set = 0, binding = 5) buffer RM { float rmean[]; };
layout(set = 0, binding = 6) buffer RV { float rvar[]; };
layout(set = 0, binding = 7) buffer Count { uint count[]; };

DEFINE_TREE(tree_sum, ADD)

// at returns the index of element e of channel c: e runs over N*S.
uint at(uint c, uint e) {
    uint b = e / p.s;
    return (b * p.c + c) * p.s + (e - b * p.s);
}

DEFINE_TREE(det_tree_sum, det_add)

// det_channel is main's work for channel c on the deterministic path: the
// same formulas with det.glsl's operations (the runtime fixes the
// workgroup, hence the tree).
void det_channel(uint c, uint t, uint nt, uint m) {
    float mean, rstd;
    if (p.mode == 2u) {
        mean = rmean[c];
        rstd = det_rsqrt(det_add(rvar[c], p.eps));
    } else {
        float sum = 0.0;
        for (uint e = t; e < m; e += nt) sum = det_add(sum, x[at(c, e)]);
        mean = det_div(det_tree_sum(sum, nt), float(m));
        float q = 0.0;
        for (uint e = t; e < m; e += nt) { float d = det_sub(x[at(c, e)], mean); q = det_mad(d, d, q); }
        q = det_tree_sum(q, nt);
        rstd = det_rsqrt(det_add(det_div(q, float(m)), p.eps));
        if (p.mode == 1u && t == 0u) {
            float keep = det_sub(1.0, p.momentum);
            rmean[c] = det_add(det_mul(keep, rmean[c]), det_mul(p.momentum, mean));
            rvar[c] = det_add(det_mul(keep, rvar[c]), det_mul(p.momentum, det_div(q, float(m - 1u))));
        }
    }
    float g = det_mul(gamma[c], rstd), b = det_sub(beta[c], det_mul(mean, g));
    for (uint e = t; e < m; e += nt) { uint i = at(c, e); y[i] = det_mad(x[i], g, b); }
    if (t == 0u) stats[c] = vec2(mean, rstd);
}

void main() {
    uint t = gl_LocalInvocationID.x, nt = gl_WorkGroupSize.x;
    uint m = p.n * p.s;
    for (uint c = gl_WorkGroupID.x; c < p.c; c += gl_NumWorkGroups.x) {
        if (DETERMINISTIC) {
            det_channel(c, t, nt, m);
            continue;
        }
        float mean, rstd;
        if (p.mode == 2u) {
            mean = rmean[c];
            rstd = inversesqrt(rvar[c] + p.eps);
        } else {
            float sum = 0.0;
            for (uint e = t; e < m; e += nt) sum += x[at(c, e)];
            mean = tree_sum(sum, nt) / float(m);
            float q = 0.0;
            for (uint e = t; e < m; e += nt) { float d = x[at(c, e)] - mean; q += d * d; }
            q = tree_sum(q, nt);
            rstd = inversesqrt(q / float(m) + p.eps);
            if (p.mode == 1u && t == 0u) {
                rmean[c] = (1.0 - p.momentum) * rmean[c] + p.momentum * mean;
                rvar[c] = (1.0 - p.momentum) * rvar[c] + p.momentum * (q / float(m - 1u));
            }
        }
        float g = gamma[c] * rstd, b = beta[c] - mean * g;
        for (uint e = t; e < m; e += nt) { uint i = at(c, e); y[i] = x[i] * g + b; }
        if (t == 0u) stats[c] = vec2(mean, rstd);
    }
    if (p.mode == 1u && gl_WorkGroupID.x == 0u && t == 0u) count[0] += 1u;
}
