#version 450
// attention_tex_fwd is attention_fwd for CPU drivers (see
// attention_tex.glsl): each invocation keeps its query row's running maximum
// m, sum l and unnormalised output acc in registers over blocks of KB keys
// s <= t, and writes y = acc / l and the row's log-sum-exp m + log(l).
#include "attention_tex.glsl"

layout(set = 0, binding = 0) uniform usamplerBuffer tqkv;
layout(set = 0, binding = 1) writeonly buffer Y { uint y[]; };
layout(set = 0, binding = 2) writeonly buffer LSE { float lse[]; };

#define KB 4u

void main() {
    uint C = p.heads * HD, C3 = 3u * C;
    uint t = gl_GlobalInvocationID.x;
    uint tq = min(t, p.T - 1u); // rows past T compute row T-1 and store nothing
    for (uint bh = gl_WorkGroupID.y; bh < p.bh; bh += gl_NumWorkGroups.y) {
        uint row0 = (bh / p.heads) * p.T, col = (bh % p.heads) * HD;
        float q[HD], acc[HD];
        LOAD_ROW(tqkv, (row0 + tq) * C3 + col, q)
        [[unroll]] for (uint d = 0u; d < HD; d++) {
            q[d] *= p.scale;
            acc[d] = 0.0;
        }
        float m = NEG_BIG, l = 0.0;
        for (uint s0 = 0u; s0 <= tq; s0 += KB) {
            float sc[KB];
            float mb = m;
            [[unroll]] for (uint j = 0u; j < KB; j++) {
                float s = 0.0;
                DOT_ROW(tqkv, (row0 + min(s0 + j, tq)) * C3 + C + col, q, s)
                sc[j] = s;
                if (s0 + j <= tq) mb = max(mb, s);
            }
            float alpha = exp(m - mb);
            l *= alpha;
            [[unroll]] for (uint d = 0u; d < HD; d++) acc[d] *= alpha;
            [[unroll]] for (uint j = 0u; j < KB; j++) {
                float e = s0 + j <= tq ? exp(sc[j] - mb) : 0.0;
                l += e;
                AXPY_ROW(tqkv, (row0 + min(s0 + j, tq)) * C3 + 2u * C + col, e, acc)
            }
            m = mb;
        }
        if (t < p.T) {
            float r = 1.0 / l;
            [[unroll]] for (uint d = 0u; d < HD; d++) acc[d] *= r;
            ST_ROW(y, (row0 + t) * C + col, acc)
            lse[bh * p.T + t] = m + log(l);
        }
    }
}
