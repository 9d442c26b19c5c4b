#version 450
// tiers: packed storage16
// conv_tex is the forward GEMM of a 2-D convolution as an implicit GEMM on
// matmul_tex's tiles: out [groups, Cout/groups, nc*Ho*Wo] = W [groups,
// Cout/groups, Kg] times the patch matrix B [Kg, nc*Ho*Wo] of
// conv_im2col, whose elements are read from the image x [N, Cin, H, W]
// (NCHW) where they lie instead of from a materialised copy: B(k, col) with
// k = (ci, i, j) and col = (n, oh, ow) is
// x[n0+n, g*Cin/groups+ci, oh*sh-ph+i*dh, ow*sw-pw+j*dw], or +0 in the
// padding. The FMAs run in matmul_tex's order (k ascending per output), so
// the result has the bits of im2col + matmul_tex.
//
// A (the weights) is fetched as matmul_tex does, 8 k steps a block; each B
// element is fetched as the texel that holds it (SIMD gathers on lavapipe,
// see matmul_tex.comp). K must be a multiple of 8; any N (columns past it
// are clamped, computed and dropped).
#include "common.glsl"
#include "fp16.glsl"
#define MATMUL_TEXELS
#define MATMUL_CONV
#include "matmul.glsl"

#define A16 (A_MODE != MODE_F32)
#define B16 (B_MODE != MODE_F32)
#define NA (A16 ? TM : 2u * TM)

uvec4 aw[NA];

float comp(uvec4 t, uint w) { return uintBitsToFloat(t[w]); }
float half_of(uvec4 t, uint h) { return unpackHalf2x16(t[h >> 1] >> ((h & 1u) << 4)).x; }

// aAt is A(r0+i, k+kk) of the fetched block: a texel holds consecutive k of
// one row.
float aAt(uint i, uint kk) {
    if (A16) return half_of(aw[i], kk);
    return comp(aw[2u * i + kk / 4u], kk % 4u);
}

uvec4 fetchA(uint e) { return texelFetch(ta, int(e / (A16 ? 8u : 4u))); }

// xAt is element e of x.
float xAt(uint e) {
    if (B16) return half_of(texelFetch(tb, int(e >> 3)), e & 7u);
    return comp(texelFetch(tb, int(e >> 2)), e & 3u);
}

void main() {
    uint lane = gl_LocalInvocationID.x;
    uint r0 = gl_WorkGroupID.y * TM;
    uint c0 = (gl_WorkGroupID.x * gl_WorkGroupSize.x + lane) * TN;
    uint batch = p.batch0 + gl_WorkGroupID.z; // the group
    uint abase = batch * p.batchA;
    clearAcc();

    uint ao[NA];
    [[unroll]] for (uint t = 0; t < NA; t++) { // row t (fp16) or half a row's block (fp32)
        uint i = A16 ? t : t / 2u, part = A16 ? 0u : (t % 2u) * 4u;
        ao[t] = abase + min(r0 + i, p.M - 1u) * p.K + part;
    }
    // Per column: the offset of its sample's first channel of the group in
    // x, and the input pixel its patch starts at.
    uint hw = p.ho * p.wo, plane = p.h * p.w;
    uint xb[TN];
    int y0[TN], x0[TN];
    [[unroll]] for (uint j = 0; j < TN; j++) {
        uint c = min(c0 + j, p.N - 1u);
        uint n = c / hw, q = c - n * hw;
        uint oh = q / p.wo, ow = q - oh * p.wo;
        xb[j] = ((p.n0 + n) * p.cin + batch * p.cg) * plane;
        y0[j] = int(oh) * p.sh - p.ph;
        x0[j] = int(ow) * p.sw - p.pw;
    }
    uint kk2 = p.kh * p.kw;

    for (uint k = 0; k < p.K; k += 8u) {
        [[unroll]] for (uint t = 0; t < NA; t++) aw[t] = fetchA(ao[t] + k);
        float bv[8][TN];
        [[unroll]] for (uint kk = 0; kk < 8u; kk++) {
            uint r = k + kk;
            uint ci = r / kk2, t = r - ci * kk2;
            uint i = t / p.kw, jw = t - i * p.kw;
            uint coff = ci * plane;
            int dy = int(i) * p.dh, dx = int(jw) * p.dw;
            [[unroll]] for (uint j = 0; j < TN; j++) {
                int hi = y0[j] + dy, wi = x0[j] + dx;
                bool in_ = hi >= 0 && wi >= 0 && hi < int(p.h) && wi < int(p.w);
                uint e = in_ ? xb[j] + coff + uint(hi) * p.w + uint(wi) : xb[j];
                float v = xAt(e);
                bv[kk][j] = in_ ? v : 0.0;
            }
        }
        [[unroll]] for (uint i = 0; i < TM; i++) {
            float av[8];
            [[unroll]] for (uint kk = 0; kk < 8u; kk++) av[kk] = aAt(i, kk);
            [[unroll]] for (uint j = 0; j < TN; j++) {
                float s = acc[i][j];
                [[unroll]] for (uint kk = 0; kk < 8u; kk++) s = fma(av[kk], bv[kk][j], s);
                acc[i][j] = s;
            }
        }
    }
    storeTile(r0, c0, batch);
}
