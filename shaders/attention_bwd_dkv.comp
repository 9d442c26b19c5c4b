#version 450
// attention_bwd_dkv is the second half of causal self-attention's backward
// pass: for each key row s, over query rows t >= s,
// dv_s = sum P_ts dy_t and dk_s = scale * sum P_ts (dy_t . v_s - D_t) q_t,
// with D from attention_bwd_dq. One writer per element: no atomics, the
// same bits every run. See attention.glsl.
// spirv-opt: off (the deterministic path: see shaders/internal/gen)
#include "attention.glsl"

layout(set = 0, binding = 0) readonly buffer QKV { uint qkv[]; };
layout(set = 0, binding = 1) readonly buffer DY { uint dy[]; };
layout(set = 0, binding = 2) readonly buffer LSE { float lse[]; };
layout(set = 0, binding = 3) readonly buffer DD { float dd[]; };
layout(set = 0, binding = 4) writeonly buffer DQKV { uint dqkv[]; };

DEFINE_LD4(ld_qkv, qkv)
DEFINE_LD4(ld_dy, dy)

shared vec4 sq[BK * HD4_MAX];
shared vec4 sg[BK * HD4_MAX];
shared float slse[BK];
shared float sdd[BK];

void main() {
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    uint hd4 = (p.hd + 3u) / 4u, C = p.heads * p.hd, C3 = 3u * C;
    uint s0w = gl_WorkGroupID.x * wg, s = s0w + lid;
    uint ks = min(s, p.T - 1u); // rows past T compute row T-1 and store nothing
    for (uint bh = gl_WorkGroupID.y; bh < p.bh; bh += gl_NumWorkGroups.y) {
        uint row0 = (bh / p.heads) * p.T, col = (bh % p.heads) * p.hd;
        vec4 k[HD4_MAX], v[HD4_MAX], dk[HD4_MAX], dv[HD4_MAX];
        uint ke = (row0 + ks) * C3 + C + col;
        for (uint d4 = 0u; d4 < hd4; d4++) {
            k[d4] = xmul4(ld_qkv(ke, 4u * d4), p.scale);
            v[d4] = ld_qkv(ke + C, 4u * d4);
            dk[d4] = vec4(0.0);
            dv[d4] = vec4(0.0);
        }
        // Queries t >= s, from the workgroup's first key row on.
        for (uint t0 = s0w; t0 < p.T; t0 += BK) {
            barrier();
            for (uint i = lid; i < BK * hd4; i += wg) {
                uint j = i / hd4, d4 = i - j * hd4;
                uint r = row0 + min(t0 + j, p.T - 1u);
                sq[j * HD4_MAX + d4] = ld_qkv(r * C3 + col, 4u * d4);
                sg[j * HD4_MAX + d4] = ld_dy(r * C + col, 4u * d4);
            }
            if (lid < BK) {
                uint li = bh * p.T + min(t0 + lid, p.T - 1u);
                slse[lid] = lse[li];
                sdd[lid] = dd[li];
            }
            barrier();
            float sc[BK], dp[BK];
            [[unroll]] for (uint j = 0u; j < BK; j++) {
                sc[j] = 0.0;
                dp[j] = 0.0;
            }
            for (uint d4 = 0u; d4 < hd4; d4++) {
                vec4 kd = k[d4], vd = v[d4];
                [[unroll]] for (uint j = 0u; j < BK; j++) {
                    sc[j] = xdot(sc[j], kd, sq[j * HD4_MAX + d4]);
                    dp[j] = xdot(dp[j], vd, sg[j * HD4_MAX + d4]);
                }
            }
            float ds[BK];
            [[unroll]] for (uint j = 0u; j < BK; j++) {
                uint tj = t0 + j;
                sc[j] = tj >= ks && tj < p.T ? xexp(xsub(sc[j], slse[j])) : 0.0; // P
                ds[j] = xmul(sc[j], xsub(dp[j], sdd[j]));
            }
            for (uint d4 = 0u; d4 < hd4; d4++) {
                vec4 a = dv[d4], b = dk[d4];
                [[unroll]] for (uint j = 0u; j < BK; j++) {
                    a = xfma4(vec4(sc[j]), sg[j * HD4_MAX + d4], a);
                    b = xfma4(vec4(ds[j]), sq[j * HD4_MAX + d4], b);
                }
                dv[d4] = a;
                dk[d4] = b;
            }
        }
        if (s < p.T) {
            for (uint d4 = 0u; d4 < hd4; d4++) dk[d4] = xmul4(dk[d4], p.scale);
            uint e = (row0 + s) * C3 + C + col;
            ST(dqkv, e, dk)
            ST(dqkv, e + C, dv)
        }
    }
}
