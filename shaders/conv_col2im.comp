#version 450
// conv_col2im is the gather form of col2im, the input gradient of a 2-D
// convolution: for samples n0 .. n0+nc, each element (n, c, h, w) of d
// [N, Cin, H, W] sums the entries of the column gradient s
// [groups, nc*Ho*Wo, Kg] that im2col read from it, in a fixed order (no
// atomics, the same bits every run), in fp32, rounded once to OUT_DT. The
// output starts at element base = n0*Cin*H*W (even). Each invocation makes
// two consecutive elements, so a 16-bit output word has one writer.
#include "ewise.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

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
DEFINE_STORE(d, d, OUT_DT)

float elem(uint e) {
    uint wi = e % p.w;
    uint hi = (e / p.w) % p.h;
    uint c = (e / (p.w * p.h)) % p.cin;
    uint nl = e / (p.w * p.h * p.cin);
    uint g = c / p.cg, ci = c % p.cg;
    uint kg = p.cg * p.kh * p.kw;
    float sum = 0.0;
    for (uint i = 0u; i < p.kh; i++) {
        int th = int(hi) + p.ph - int(i) * p.dh;
        if (th < 0 || th % p.sh != 0 || th / p.sh >= int(p.ho)) continue;
        uint oh = uint(th / p.sh);
        for (uint j = 0u; j < p.kw; j++) {
            int tw = int(wi) + p.pw - int(j) * p.dw;
            if (tw < 0 || tw % p.sw != 0 || tw / p.sw >= int(p.wo)) continue;
            uint r = nl * p.ho * p.wo + oh * p.wo + uint(tw / p.sw);
            sum += s_at((g * p.rows + r) * kg + (ci * p.kh + i) * p.kw + j);
        }
    }
    return sum;
}

void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        uint e = 2u * w;
        d_pair(p.base / 2u + w, p.base + p.n, vec2(elem(e), e + 1u < p.n ? elem(e + 1u) : 0.0));
    }
}
