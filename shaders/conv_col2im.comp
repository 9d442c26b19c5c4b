#version 450
// conv_col2im is the gather form of col2im, the input gradient of a 2-D
// convolution: for samples n0 .. n0+nc, each element (n, c, h, w) of d
// [N, Cin, H, W] sums the entries of the column gradient s [groups*Kg,
// rows] (conv_im2col's layout, rows = nc*Ho*Wo) that im2col read from it,
// in a fixed order (no atomics, the same bits every run), in fp32, rounded
// once to OUT_DT. The output starts at element base = n0*Cin*H*W (even for a 16-bit d).
// Each invocation makes RUN consecutive elements (see conv.glsl), so a
// 16-bit output word has one writer. UNIT_STRIDE skips the divisions by the
// stride.
#include "conv.glsl"
#include "det_extra.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;
layout(constant_id = 4) const bool UNIT_STRIDE = false;

layout(push_constant) uniform Col2imPush {
    uint n;      // elements of d written: nc*Cin*H*W
    uint base;   // n0*Cin*H*W
    uint cin;    // input channels
    uint h, w;   // input size
    uint ho, wo; // output size
    uint kh, kw; // kernel size
    int sh, sw;  // stride
    int ph, pw;  // padding
    int dh, dw;  // dilation
    uint cg;     // input channels per group
    uint rows;   // nc*Ho*Wo
} p;
layout(set = 0, binding = 0) readonly buffer S { uint s[]; };
layout(set = 0, binding = 1) writeonly buffer D { uint d[]; };

DEFINE_LOADS(s, s, IN0_DT)
DEFINE_STORE_AT(d, d, OUT_DT)

// out returns the output index that tap i of a kernel axis reads input
// index x from, or -1.
int out_index(int x, int pad, uint i, int dil, int stride, uint len) {
    int t = x + pad - int(i) * dil;
    if (t < 0) return -1;
    if (!UNIT_STRIDE) {
        if (t % stride != 0) return -1;
        t /= stride;
    }
    return t < int(len) ? t : -1;
}

float elem(uint nl, uint c, uint hi, uint wi) {
    uint g = c / p.cg, ci = c - g * p.cg;
    uint kg = p.cg * p.kh * p.kw;
    uint col0 = nl * p.ho * p.wo;
    uint row0 = g * kg + ci * p.kh * p.kw;
    float sum = 0.0;
    for (uint i = 0u; i < p.kh; i++) {
        int oh = out_index(int(hi), p.ph, i, p.dh, p.sh, p.ho);
        if (oh < 0) continue;
        for (uint j = 0u; j < p.kw; j++) {
            int ow = out_index(int(wi), p.pw, j, p.dw, p.sw, p.wo);
            if (ow < 0) continue;
            sum = xadd(sum, s_at((row0 + i * p.kw + j) * p.rows + col0 + uint(oh) * p.wo + uint(ow)));
        }
    }
    return sum;
}

void main() {
    GRID_STRIDE(run, (p.n + RUN - 1u) / RUN) {
        uint e = RUN * run;
        uint r = e / p.w, wi = e - r * p.w;
        uint r2 = r / p.h, hi = r - r2 * p.h;
        uint nl = r2 / p.cin, c = r2 - nl * p.cin;
        for (uint k = 0u; k < RUN && e + k < p.n; k += 2u) {
            vec2 v = vec2(0.0);
            for (uint t = 0u; t < 2u; t++) {
                if (e + k + t >= p.n) break;
                v[t] = elem(nl, c, hi, wi);
                if (++wi == p.w) {
                    wi = 0u;
                    if (++hi == p.h) {
                        hi = 0u;
                        if (++c == p.cin) { c = 0u; nl++; }
                    }
                }
            }
            d_at_pair(p.base + e + k, p.base + p.n, v);
        }
    }
}
