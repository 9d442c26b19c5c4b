#version 450
// conv_permute moves a convolution's values between the GEMM layout
// [groups, nc*HW, Cg] (rows (n, p) of samples n0 .. n0+nc, Cg channels per
// group) and NCHW [N, groups*Cg, HW]. By default s is the GEMM result and d
// the NCHW output from sample n0 on (element base = n0*C*HW, even), with
// bias[c] added when HAS_BIAS. With FROM_NCHW s is NCHW (read from sample n0 on)
// and d the GEMM layout. Sums run in fp32 and are rounded once to OUT_DT.
// Each invocation makes two consecutive elements, so a 16-bit output word
// has one writer.
#include "ewise.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 2) const uint IN1_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;
layout(constant_id = 4) const bool FROM_NCHW = false;
layout(constant_id = 5) const bool HAS_BIAS = false;

layout(push_constant) uniform PermutePush {
    uint n;    // elements moved
    uint base; // element offset of sample n0 in the NCHW tensor
    uint hw;   // pixels per channel
    uint c;    // channels
    uint cg;   // channels per group
    uint rows; // nc*HW
} p;
layout(set = 0, binding = 0) readonly buffer S { uint s[]; };
layout(set = 0, binding = 1) readonly buffer Bias { uint bias[]; };
layout(set = 0, binding = 2) writeonly buffer D { uint d[]; };

DEFINE_LOADS(s, s, IN0_DT)
DEFINE_LOADS(bias, bias, IN1_DT)
DEFINE_STORE(d, d, OUT_DT)

float elem(uint e) {
    if (!FROM_NCHW) {
        uint q = e % p.hw;
        uint ch = (e / p.hw) % p.c;
        uint nl = e / (p.hw * p.c);
        uint g = ch / p.cg, cl = ch % p.cg;
        float v = s_at((g * p.rows + nl * p.hw + q) * p.cg + cl);
        if (HAS_BIAS) v += bias_at(ch);
        return v;
    }
    uint cl = e % p.cg;
    uint r = (e / p.cg) % p.rows;
    uint g = e / (p.cg * p.rows);
    uint nl = r / p.hw, q = r % p.hw;
    return s_at(p.base + (nl * p.c + g * p.cg + cl) * p.hw + q);
}

void main() {
    uint off = FROM_NCHW ? 0u : p.base; // even: pairs stay whole words
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        uint e = 2u * w;
        d_pair(off / 2u + w, off + p.n, vec2(elem(e), e + 1u < p.n ? elem(e + 1u) : 0.0));
    }
}
