#version 450
// attention_bwd_dq is the first half of causal self-attention's backward
// pass: for each query row t, D_t = dy_t . y_t (saved for attention_bwd_dkv)
// and dq_t = scale * sum over s <= t of P_ts (dy_t . v_s - D_t) k_s, with
// P_ts = exp(scale q_t . k_s - lse_t) recomputed from the forward's
// log-sum-exp. One writer per element: no atomics, the same bits every run.
// See attention.glsl.
// spirv-opt: off (the deterministic path: see shaders/internal/gen)
#include "attention.glsl"

layout(set = 0, binding = 0) readonly buffer QKV { uint qkv[]; };
layout(set = 0, binding = 1) readonly buffer Y { uint y[]; };
layout(set = 0, binding = 2) readonly buffer DY { uint dy[]; };
layout(set = 0, binding = 3) readonly buffer LSE { float lse[]; };
layout(set = 0, binding = 4) writeonly buffer DQKV { uint dqkv[]; };
layout(set = 0, binding = 5) writeonly buffer DD { float dd[]; };

DEFINE_LD4(ld_qkv, qkv)
DEFINE_LD4(ld_y, y)
DEFINE_LD4(ld_dy, dy)

shared vec4 sk[BK * HD4_MAX];
shared vec4 sv[BK * HD4_MAX];

void main() {
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    uint hd4 = (p.hd + 3u) / 4u, C = p.heads * p.hd, C3 = 3u * C;
    uint t0 = gl_WorkGroupID.x * wg, t = t0 + lid;
    uint tq = min(t, p.T - 1u);
    uint tEnd = min(p.T, t0 + wg);
    for (uint bh = gl_WorkGroupID.y; bh < p.bh; bh += gl_NumWorkGroups.y) {
        uint row0 = (bh / p.heads) * p.T, col = (bh % p.heads) * p.hd;
        vec4 q[HD4_MAX], g[HD4_MAX], dq[HD4_MAX];
        uint qe = (row0 + tq) * C3 + col, ye = (row0 + tq) * C + col;
        float D = 0.0;
        for (uint d4 = 0u; d4 < hd4; d4++) {
            q[d4] = xmul4(ld_qkv(qe, 4u * d4), p.scale);
            g[d4] = ld_dy(ye, 4u * d4);
            D = xdot(D, g[d4], ld_y(ye, 4u * d4));
            dq[d4] = vec4(0.0);
        }
        float L = lse[bh * p.T + tq];
        for (uint s0 = 0u; s0 < tEnd; s0 += BK) {
            barrier();
            for (uint i = lid; i < BK * hd4; i += wg) {
                uint j = i / hd4, d4 = i - j * hd4;
                uint e = (row0 + min(s0 + j, p.T - 1u)) * C3 + C + col;
                sk[j * HD4_MAX + d4] = ld_qkv(e, 4u * d4);
                sv[j * HD4_MAX + d4] = ld_qkv(e + C, 4u * d4);
            }
            barrier();
            float sc[BK], dp[BK];
            [[unroll]] for (uint j = 0u; j < BK; j++) {
                sc[j] = 0.0;
                dp[j] = 0.0;
            }
            for (uint d4 = 0u; d4 < hd4; d4++) {
                vec4 qd = q[d4], gd = g[d4];
                [[unroll]] for (uint j = 0u; j < BK; j++) {
                    sc[j] = xdot(sc[j], qd, sk[j * HD4_MAX + d4]);
                    dp[j] = xdot(dp[j], gd, sv[j * HD4_MAX + d4]);
                }
            }
            [[unroll]] for (uint j = 0u; j < BK; j++) {
                sc[j] = s0 + j <= tq ? xmul(xexp(xsub(sc[j], L)), xsub(dp[j], D)) : 0.0; // dS
            }
            for (uint d4 = 0u; d4 < hd4; d4++) {
                vec4 a = dq[d4];
                [[unroll]] for (uint j = 0u; j < BK; j++) a = xfma4(vec4(sc[j]), sk[j * HD4_MAX + d4], a);
                dq[d4] = a;
            }
        }
        if (t < p.T) {
            for (uint d4 = 0u; d4 < hd4; d4++) dq[d4] = xmul4(dq[d4], p.scale);
            ST(dqkv, (row0 + t) * C3 + col, dq)
            dd[bh * p.T + t] = D;
        }
    }
}
