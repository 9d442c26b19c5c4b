#version 450
// attention_fwd is causal self-attention's forward pass with an online
// softmax (FlashAttention): each invocation keeps its query row's running
// maximum m, sum l and unnormalised output acc over key blocks s <= t, and
// writes y = acc / l and the row's log-sum-exp m + log(l), which the
// backward pass takes instead of the probabilities. See attention.glsl.
// spirv-opt: off (the deterministic path: see shaders/internal/gen)
#include "attention.glsl"

layout(set = 0, binding = 0) readonly buffer QKV { uint qkv[]; };
layout(set = 0, binding = 1) writeonly buffer Y { uint y[]; };
layout(set = 0, binding = 2) writeonly buffer LSE { float lse[]; };

DEFINE_LD4(ld_qkv, qkv)

shared vec4 sk[BK * HD4_MAX];
shared vec4 sv[BK * HD4_MAX];

void main() {
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    uint hd4 = (p.hd + 3u) / 4u, C = p.heads * p.hd, C3 = 3u * C;
    uint t0 = gl_WorkGroupID.x * wg, t = t0 + lid;
    uint tq = min(t, p.T - 1u);     // rows past T compute row T-1 and store nothing
    uint tEnd = min(p.T, t0 + wg);  // the workgroup's keys are 0..tEnd-1
    for (uint bh = gl_WorkGroupID.y; bh < p.bh; bh += gl_NumWorkGroups.y) {
        uint row0 = (bh / p.heads) * p.T, col = (bh % p.heads) * p.hd;
        vec4 q[HD4_MAX], acc[HD4_MAX];
        uint qe = (row0 + tq) * C3 + col;
        for (uint d4 = 0u; d4 < hd4; d4++) {
            q[d4] = xmul4(ld_qkv(qe, 4u * d4), p.scale);
            acc[d4] = vec4(0.0);
        }
        float m = NEG_BIG, l = 0.0;
        for (uint s0 = 0u; s0 < tEnd; s0 += BK) {
            barrier(); // the last block is consumed
            for (uint i = lid; i < BK * hd4; i += wg) {
                uint j = i / hd4, d4 = i - j * hd4;
                uint e = (row0 + min(s0 + j, p.T - 1u)) * C3 + C + col;
                sk[j * HD4_MAX + d4] = ld_qkv(e, 4u * d4);
                sv[j * HD4_MAX + d4] = ld_qkv(e + C, 4u * d4);
            }
            barrier();
            float sc[BK];
            [[unroll]] for (uint j = 0u; j < BK; j++) sc[j] = 0.0;
            for (uint d4 = 0u; d4 < hd4; d4++) {
                vec4 qd = q[d4];
                [[unroll]] for (uint j = 0u; j < BK; j++) sc[j] = xdot(sc[j], qd, sk[j * HD4_MAX + d4]);
            }
            float mb = m;
            [[unroll]] for (uint j = 0u; j < BK; j++) {
                if (s0 + j <= tq) mb = max(mb, sc[j]);
            }
            float alpha = xexp(xsub(m, mb));
            l = xmul(l, alpha);
            [[unroll]] for (uint j = 0u; j < BK; j++) {
                sc[j] = s0 + j <= tq ? xexp(xsub(sc[j], mb)) : 0.0;
                l = xadd(l, sc[j]);
            }
            for (uint d4 = 0u; d4 < hd4; d4++) {
                vec4 a = xmul4(acc[d4], alpha);
                [[unroll]] for (uint j = 0u; j < BK; j++) a = xfma4(vec4(sc[j]), sv[j * HD4_MAX + d4], a);
                acc[d4] = a;
            }
            m = mb;
        }
        if (t < p.T) {
            float r = xdiv(1.0, l);
            for (uint d4 = 0u; d4 < hd4; d4++) acc[d4] = xmul4(acc[d4], r);
            ST(y, (row0 + t) * C + col, acc)
            lse[bh * p.T + t] = xadd(m, xlog(l));
        }
    }
}
