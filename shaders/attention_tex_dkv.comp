#version 450
// attention_tex_dkv is attention_bwd_dkv for CPU drivers (see
// attention_tex.glsl): for each key row s, over query rows t >= s,
// dv_s = sum P_ts dy_t and dk_s = scale * sum P_ts (dy_t . v_s - D_t) q_t,
// with D from attention_tex_dq (or attention_bwd_dq). One writer per
// element.
#include "attention_tex.glsl"

layout(set = 0, binding = 0) uniform usamplerBuffer tqkv;
layout(set = 0, binding = 1) uniform usamplerBuffer tdy;
layout(set = 0, binding = 2) uniform usamplerBuffer tlse;
layout(set = 0, binding = 3) uniform usamplerBuffer tdd;
layout(set = 0, binding = 4) writeonly buffer DQKV { uint dqkv[]; };

void main() {
    uint C = p.heads * HD, C3 = 3u * C;
    uint s = gl_GlobalInvocationID.x;
    uint ks = min(s, p.T - 1u); // rows past T compute row T-1 and store nothing
    for (uint bh = gl_WorkGroupID.y; bh < p.bh; bh += gl_NumWorkGroups.y) {
        uint row0 = (bh / p.heads) * p.T, col = (bh % p.heads) * HD;
        float k[HD], v[HD], dk[HD], dv[HD];
        uint ke = (row0 + ks) * C3 + C + col;
        LOAD_ROW(tqkv, ke, k)
        LOAD_ROW(tqkv, ke + C, v)
        [[unroll]] for (uint d = 0u; d < HD; d++) {
            k[d] *= p.scale;
            dk[d] = 0.0;
            dv[d] = 0.0;
        }
        for (uint t = ks; t < p.T; t++) {
            uint qe = (row0 + t) * C3 + col, ge = (row0 + t) * C + col;
            uvec4 q[NT];
            float sc = 0.0, dp = 0.0;
            [[unroll]] for (uint t_ = 0u; t_ < NT; t_++) {
                q[t_] = texelFetch(tqkv, int(qe / EPT + t_));
                [[unroll]] for (uint i_ = 0u; i_ < EPT; i_++) sc = fma(k[t_ * EPT + i_], tx(q[t_], i_), sc);
            }
            DOT_ROW(tdy, ge, v, dp)
            float P = exp(sc - fetchF32(tlse, bh * p.T + t));
            float ds = P * (dp - fetchF32(tdd, bh * p.T + t));
            AXPY_ROW(tdy, ge, P, dv)
            [[unroll]] for (uint t_ = 0u; t_ < NT; t_++) {
                [[unroll]] for (uint i_ = 0u; i_ < EPT; i_++) dk[t_ * EPT + i_] = fma(ds, tx(q[t_], i_), dk[t_ * EPT + i_]);
            }
        }
        if (s < p.T) {
            [[unroll]] for (uint d = 0u; d < HD; d++) dk[d] *= p.scale;
            uint e = (row0 + s) * C3 + C + col;
            ST_ROW(dqkv, e, dk)
            ST_ROW(dqkv, e + C, dv)
        }
    }
}
