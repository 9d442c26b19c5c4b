#version 450
// attention_tex_fwd is attention_fwd for CPU drivers (see
// attention_tex.glsl): each invocation keeps TQ consecutive query rows'
// running maxima m, sums l and unnormalised outputs acc in registers over
// blocks of KB keys s <= t, and writes y = acc / l and each row's
// log-sum-exp m + log(l). A key's texels serve all TQ rows.
#include "attention_tex.glsl"

layout(set = 0, binding = 0) uniform usamplerBuffer tqkv;
layout(set = 0, binding = 1) writeonly buffer Y { uint y[]; };
layout(set = 0, binding = 2) writeonly buffer LSE { float lse[]; };

// TQ is the query rows of an invocation: 2 took about a fifth less CPU
// than 1 on lavapipe at T=64 and head size 32, 4 more (registers spill).
layout(constant_id = 3) const uint TQ = 2;

#define KB 4u

void main() {
    uint C = p.heads * HD, C3 = 3u * C;
    uint t0 = gl_GlobalInvocationID.x * TQ;
    uint tl = min(t0 + TQ - 1u, p.T - 1u); // the last row computed; rows past T compute row T-1 and store nothing
    for (uint bh = gl_WorkGroupID.y; bh < p.bh; bh += gl_NumWorkGroups.y) {
        uint row0 = (bh / p.heads) * p.T, col = (bh % p.heads) * HD;
        float q[TQ][HD], acc[TQ][HD], m[TQ], l[TQ];
        [[unroll]] for (uint r = 0u; r < TQ; r++) {
            LOAD_ROW(tqkv, (row0 + min(t0 + r, tl)) * C3 + col, q[r])
            [[unroll]] for (uint d = 0u; d < HD; d++) {
                q[r][d] *= p.scale;
                acc[r][d] = 0.0;
            }
            m[r] = NEG_BIG;
            l[r] = 0.0;
        }
        for (uint s0 = 0u; s0 <= tl; s0 += KB) {
            float sc[TQ][KB];
            [[unroll]] for (uint j = 0u; j < KB; j++) {
                uvec4 kx[NT];
                uint ke = (row0 + min(s0 + j, tl)) * C3 + C + col;
                [[unroll]] for (uint t_ = 0u; t_ < NT; t_++) kx[t_] = texelFetch(tqkv, int(ke / EPT + t_));
                [[unroll]] for (uint r = 0u; r < TQ; r++) {
                    float s = 0.0;
                    [[unroll]] for (uint t_ = 0u; t_ < NT; t_++) {
                        [[unroll]] for (uint i_ = 0u; i_ < EPT; i_++) s = fma(q[r][t_ * EPT + i_], tx(kx[t_], i_), s);
                    }
                    sc[r][j] = s;
                }
            }
            [[unroll]] for (uint r = 0u; r < TQ; r++) {
                float mb = m[r];
                [[unroll]] for (uint j = 0u; j < KB; j++) {
                    if (s0 + j <= t0 + r) mb = max(mb, sc[r][j]);
                }
                float alpha = exp(m[r] - mb);
                l[r] *= alpha;
                [[unroll]] for (uint d = 0u; d < HD; d++) acc[r][d] *= alpha;
                [[unroll]] for (uint j = 0u; j < KB; j++) {
                    sc[r][j] = s0 + j <= t0 + r ? exp(sc[r][j] - mb) : 0.0;
                    l[r] += sc[r][j];
                }
                m[r] = mb;
            }
            [[unroll]] for (uint j = 0u; j < KB; j++) {
                uint ve = (row0 + min(s0 + j, tl)) * C3 + 2u * C + col;
                [[unroll]] for (uint t_ = 0u; t_ < NT; t_++) {
                    uvec4 x = texelFetch(tqkv, int(ve / EPT + t_));
                    [[unroll]] for (uint i_ = 0u; i_ < EPT; i_++) {
                        float vv = tx(x, i_);
                        [[unroll]] for (uint r = 0u; r < TQ; r++) acc[r][t_ * EPT + i_] = fma(sc[r][j], vv, acc[r][t_ * EPT + i_]);
                    }
                }
            }
        }
        [[unroll]] for (uint r = 0u; r < TQ; r++) {
            uint t = t0 + r;
            if (t < p.T) {
                float inv = 1.0 / l[r];
                [[unroll]] for (uint d = 0u; d < HD; d++) acc[r][d] *= inv;
                ST_ROW(y, (row0 + t) * C + col, acc[r])
                lse[bh * p.T + t] = m[r] + log(l[r]);
            }
        }
    }
}
