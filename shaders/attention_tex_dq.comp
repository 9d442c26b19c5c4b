#version 450
// attention_tex_dq is attention_bwd_dq for CPU drivers (see
// attention_tex.glsl): for each query row t, D_t = dy_t . y_t and
// dq_t = scale * sum over s <= t of P_ts (dy_t . v_s - D_t) k_s, with
// P_ts = exp(scale q_t . k_s - lse_t). One writer per element.
#include "attention_tex.glsl"

layout(set = 0, binding = 0) uniform usamplerBuffer tqkv;
layout(set = 0, binding = 1) uniform usamplerBuffer ty;
layout(set = 0, binding = 2) uniform usamplerBuffer tdy;
layout(set = 0, binding = 3) readonly buffer LSE { float lse[]; };
layout(set = 0, binding = 4) writeonly buffer DQKV { uint dqkv[]; };
layout(set = 0, binding = 5) writeonly buffer DD { float dd[]; };

void main() {
    uint C = p.heads * HD, C3 = 3u * C;
    uint t = gl_GlobalInvocationID.x;
    uint tq = min(t, p.T - 1u);
    for (uint bh = gl_WorkGroupID.y; bh < p.bh; bh += gl_NumWorkGroups.y) {
        uint row0 = (bh / p.heads) * p.T, col = (bh % p.heads) * HD;
        float q[HD], g[HD], dq[HD];
        LOAD_ROW(tqkv, (row0 + tq) * C3 + col, q)
        LOAD_ROW(tdy, (row0 + tq) * C + col, g)
        float D = 0.0;
        DOT_ROW(ty, (row0 + tq) * C + col, g, D)
        [[unroll]] for (uint d = 0u; d < HD; d++) {
            q[d] *= p.scale;
            dq[d] = 0.0;
        }
        float L = lse[bh * p.T + tq];
        for (uint s = 0u; s <= tq; s++) {
            uint ke = (row0 + s) * C3 + C + col;
            uvec4 k[NT];
            float sc = 0.0, dp = 0.0;
            [[unroll]] for (uint t_ = 0u; t_ < NT; t_++) {
                k[t_] = texelFetch(tqkv, int(ke / EPT + t_));
                [[unroll]] for (uint i_ = 0u; i_ < EPT; i_++) sc = fma(q[t_ * EPT + i_], tx(k[t_], i_), sc);
            }
            DOT_ROW(tqkv, ke + C, g, dp)
            float ds = exp(sc - L) * (dp - D);
            [[unroll]] for (uint t_ = 0u; t_ < NT; t_++) {
                [[unroll]] for (uint i_ = 0u; i_ < EPT; i_++) dq[t_ * EPT + i_] = fma(ds, tx(k[t_], i_), dq[t_ * EPT + i_]);
            }
        }
        if (t < p.T) {
            [[unroll]] for (uint d = 0u; d < HD; d++) dq[d] *= p.scale;
            ST_ROW(dqkv, (row0 + t) * C3 + col, dq)
            dd[bh * p.T + t] = D;
        }
    }
}
