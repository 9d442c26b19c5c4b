#version 450
// conv_im2col lays out the patches a 2-D convolution reads as the columns
// of a GEMM operand: for samples n0 .. n0+nc of x [N, Cin, H, W] (NCHW), d
// is [groups*Kg, rows] with Kg = Cin/groups*kH*kW and rows = nc*Ho*Wo: row
// (g, ci, i, j), column (n, oh, ow), holding
// x[n0+n, g*Cin/groups+ci, oh*sh-ph+i*dh, ow*sw-pw+j*dw], or 0 where that
// falls in the padding. Values are converted from IN0_DT to OUT_DT (fp32 or
// fp16; rows must then be even, so that each word has one writer).
// Workgroup row y is d's row k0 + y; each invocation makes RUN consecutive
// columns (see conv.glsl).
#include "conv.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform ConvPush {
    uint k0;     // first row of d in this dispatch
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

DEFINE_BITS(x, x, IN0_DT)
DEFINE_STORE_AT(d, d, OUT_DT)
DEFINE_STORE_BITS(d, d, OUT_DT)

void main() {
    uint row = p.k0 + gl_WorkGroupID.y;
    uint kk = p.kh * p.kw, kg = p.cg * kk;
    uint g = row / kg, k = row - g * kg;
    uint ci = k / kk, t = k - ci * kk;
    int i = int(t / p.kw), j = int(t - uint(i) * p.kw);
    uint plane = g * p.cg + ci;  // input channel
    int dy = i * p.dh - p.ph, dx = j * p.dw - p.pw;
    uint hw = p.ho * p.wo;
    uint at = row * p.rows; // d's element offset of the row
    for (uint run = gl_GlobalInvocationID.x; run < (p.rows + RUN - 1u) / RUN; run += gl_NumWorkGroups.x * gl_WorkGroupSize.x) {
        uint e = RUN * run;
        uint nl = e / hw, q = e - nl * hw;
        uint oh = q / p.wo, ow = q - oh * p.wo;
        uint xbase = ((p.n0 + nl) * p.cin + plane) * p.h * p.w;
        for (uint k = 0u; k < RUN && e + k < p.rows; k += 2u) {
            uvec2 b = uvec2(0u); // +0 in every dtype
            for (uint s = 0u; s < 2u; s++) {
                int hi = int(oh) * p.sh + dy, wi = int(ow) * p.sw + dx;
                if (e + k + s < p.rows && hi >= 0 && wi >= 0 && hi < int(p.h) && wi < int(p.w)) {
                    b[s] = x_bits(xbase + uint(hi) * p.w + uint(wi));
                }
                if (++ow == p.wo) {
                    ow = 0u;
                    if (++oh == p.ho) { oh = 0u; xbase += p.cin * p.h * p.w; }
                }
            }
            if (IN0_DT == OUT_DT) {
                d_bits_pair(at + e + k, at + p.rows, b);
            } else {
                d_at_pair(at + e + k, at + p.rows, vec2(bits_to_f32(b.x, IN0_DT), bits_to_f32(b.y, IN0_DT)));
            }
        }
    }
}
