#version 450
// conv_permute moves a convolution's values between the GEMM layout
// [C, nc*HW] (channel-major: row c holds samples n0 .. n0+nc, pixel by
// pixel) and NCHW [N, C, HW]. By default s is the GEMM result and d the
// NCHW output from sample n0 on (element base = n0*C*HW, even for a 16-bit d), with
// bias[c] added when HAS_BIAS. With FROM_NCHW s is NCHW (read from element
// base on) and d the GEMM layout. Sums run in fp32 and are rounded once to
// OUT_DT. Each invocation makes RUN consecutive elements of d (see
// conv.glsl), so a 16-bit word has one writer.
#include "conv.glsl"
#include "det_extra.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 2) const uint IN1_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;
layout(constant_id = 4) const bool FROM_NCHW = false;
layout(constant_id = 5) const bool HAS_BIAS = false;

layout(push_constant) uniform PermutePush {
    uint n;    // elements moved: nc*C*HW
    uint base; // element offset of sample n0 in the NCHW tensor
    uint hw;   // pixels per channel
    uint c;    // channels
    uint rows; // nc*HW
} p;
layout(set = 0, binding = 0) readonly buffer S { uint s[]; };
layout(set = 0, binding = 1) readonly buffer Bias { uint bias[]; };
layout(set = 0, binding = 2) writeonly buffer D { uint d[]; };

DEFINE_LOADS(s, s, IN0_DT)
DEFINE_BITS(s, s, IN0_DT)
DEFINE_STORE_BITS(d, d, OUT_DT)
DEFINE_LOADS(bias, bias, IN1_DT)
DEFINE_STORE_AT(d, d, OUT_DT)

void main() {
    uint off = FROM_NCHW ? 0u : p.base;
    GRID_STRIDE(run, (p.n + RUN - 1u) / RUN) {
        uint e = RUN * run;
        if (!FROM_NCHW) {
            // e = (nl*C + ch)*HW + q in d
            uint r = e / p.hw, q = e - r * p.hw;
            uint nl = r / p.c, ch = r - nl * p.c;
            for (uint k = 0u; k < RUN && e + k < p.n; k += 2u) {
                vec2 v = vec2(0.0);
                for (uint t = 0u; t < 2u; t++) {
                    if (e + k + t >= p.n) break;
                    v[t] = s_at(ch * p.rows + nl * p.hw + q);
                    if (HAS_BIAS) v[t] = xadd(v[t], bias_at(ch));
                    if (++q == p.hw) {
                        q = 0u;
                        if (++ch == p.c) { ch = 0u; nl++; }
                    }
                }
                d_at_pair(off + e + k, off + p.n, v);
            }
        } else {
            // e = ch*rows + nl*HW + q in d
            uint ch = e / p.rows, r = e - ch * p.rows;
            uint nl = r / p.hw, q = r - nl * p.hw;
            for (uint k = 0u; k < RUN && e + k < p.n; k += 2u) {
                uvec2 b = uvec2(0u);
                for (uint t = 0u; t < 2u; t++) {
                    if (e + k + t >= p.n) break;
                    b[t] = s_bits(p.base + (nl * p.c + ch) * p.hw + q);
                    if (++q == p.hw) {
                        q = 0u;
                        if (++nl * p.hw == p.rows) { nl = 0u; ch++; }
                    }
                }
                if (IN0_DT == OUT_DT) {
                    d_bits_pair(off + e + k, off + p.n, b);
                } else {
                    d_at_pair(off + e + k, off + p.n, vec2(bits_to_f32(b.x, IN0_DT), bits_to_f32(b.y, IN0_DT)));
                }
            }
        }
    }
}
