#version 450
// conv_im2col lays out the patches a 2-D convolution reads as GEMM rows:
// for samples n0 .. n0+nc of x [N, Cin, H, W] (NCHW), d is
// [groups, nc*Ho*Wo, Kg] with Kg = Cin/groups*kH*kW, row (n, oh, ow), column
// (ci, i, j), holding x[n0+n, g*Cin/groups+ci, oh*sh-ph+i*dh, ow*sw-pw+j*dw]
// or 0 where that falls in the padding. Values are converted from IN0_DT to
// OUT_DT (fp32 or fp16, what MatMul reads). Each invocation makes two
// consecutive elements, so a 16-bit output word has one writer.
#include "ewise.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform ConvPush {
    uint n;      // elements of d
    uint n0;     // first sample
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
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) writeonly buffer D { uint d[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_STORE(d, d, OUT_DT)

float elem(uint e) {
    uint kg = p.cg * p.kh * p.kw;
    uint k = e % kg;
    uint r = (e / kg) % p.rows;
    uint g = e / (kg * p.rows);
    uint hw = p.ho * p.wo;
    uint nl = r / hw, q = r % hw;
    uint oh = q / p.wo, ow = q % p.wo;
    uint kk = p.kh * p.kw;
    uint ci = k / kk, t = k % kk;
    int i = int(t / p.kw), j = int(t % p.kw);
    int hi = int(oh) * p.sh - p.ph + i * p.dh;
    int wi = int(ow) * p.sw - p.pw + j * p.dw;
    if (hi < 0 || wi < 0 || hi >= int(p.h) || wi >= int(p.w)) return 0.0;
    uint c = g * p.cg + ci;
    return x_at((((p.n0 + nl) * p.cin + c) * p.h + uint(hi)) * p.w + uint(wi));
}

void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        uint e = 2u * w;
        d_pair(w, p.n, vec2(elem(e), e + 1u < p.n ? elem(e + 1u) : 0.0));
    }
}
