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
// see matmul_tex.comp), except with ROW_RUNS: where the stride along
// the width is 1 and Wo a multiple of TN, the TN columns of an invocation
// read TN neighbours of one input row at every k, which come from the
// RUN16 (fp16) or RUN32 (fp32) texels that hold them, shifted into place
// with selects, the padding masked to +0. (A per-lane choice between the
// two would not help: lavapipe runs both sides of a branch.) K must be a multiple of 8; any N (columns past it
// are clamped, computed and dropped).
#include "common.glsl"
#include "fp16.glsl"
#define MATMUL_TEXELS
#define MATMUL_CONV
#include "matmul.glsl"

layout(constant_id = 14) const bool ROW_RUNS = false;
// RUN16 and RUN32 are the texels that hold a run of TN elements starting
// anywhere in its first texel (of 8 fp16 or 4 fp32 elements); TN is even.
#define RUN16 ((TN + 14u) / 8u)
#define RUN32 ((TN + 6u) / 4u)
// K_RUNS is the weight gradient (tensor/conv_grad_implicit.go): the
// "kernel" is the output's Ho x Wo pixels, the "channels" the samples, the
// columns (ci, i, j). A is dy [N, Cout, Ho, Wo] as it lies (row co, k =
// (n, pixel): rows p.kh*p.kw apart, samples p.batches*p.batchA), x is read
// as it lies (column ci of group g is channel g*p.cg+ci, samples
// p.cin*plane apart). Wo is a multiple of 8 and its dilation 1, so the 8 k
// of a block are 8 neighbours of one row of x per column, fetched as a run.
layout(constant_id = 15) const bool K_RUNS = false;
// TAPS (K_RUNS only, 0 for off): the kernel width kW, where its dilation is
// 1 and TN a multiple of kW. Each TAPS columns of an invocation are then the
// taps j = 0 .. kW-1 of one kernel row, which read neighbours of one row of
// x: one run of 8+kW-1 elements serves all of them (each column a window
// of it at a fixed shift), instead of a run of 8 per column.
layout(constant_id = 8) const uint TAPS = 0u;
// WIN is the length of that run (at most 15: kW <= 8); TP the columns one
// run serves.
#define TP (TAPS == 0u ? 1u : TAPS)
#define WIN (7u + TP)
// NCHW_OUT: the output is stored as NCHW [N, Cout, Ho, Wo] with the bias
// of the row (the output channel) added, in the output dtype: no fp32 copy
// and permute after the GEMM. Ho*Wo is a multiple of TN, so an
// invocation's columns are one run of a sample's plane (whole words in the
// packed tier).
layout(constant_id = 12) const bool NCHW_OUT = false;

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

// run8 returns elements e0 .. e0+7 of x from the texels that hold them,
// shifted into place with selects; texels are clamped into x (what lies
// outside is masked by the caller).
void run8(int e0, int last, out float rv[8]) {
    if (B16) {
        uvec4 tw[2];
        [[unroll]] for (uint t = 0; t < 2u; t++) tw[t] = texelFetch(tb, clamp((e0 >> 3) + int(t), 0, last));
        uint ws = (uint(e0) >> 1) & 3u;
        bool odd = (e0 & 1) != 0;
        uint wd[5];
        [[unroll]] for (uint i = 0; i < 5u; i++) {
            uint a0 = tw[i / 4u][i % 4u], a1 = tw[(i + 1u) / 4u][(i + 1u) % 4u];
            uint a2 = tw[(i + 2u) / 4u][(i + 2u) % 4u];
            uint a3 = (i + 3u) / 4u <= 1u ? tw[(i + 3u) / 4u][(i + 3u) % 4u] : 0u;
            wd[i] = ws == 0u ? a0 : ws == 1u ? a1 : ws == 2u ? a2 : a3;
        }
        [[unroll]] for (uint i = 0; i < 4u; i++) {
            vec2 h = unpackHalf2x16(odd ? (wd[i] >> 16) | (wd[i + 1u] << 16) : wd[i]);
            rv[2u * i] = h.x;
            rv[2u * i + 1u] = h.y;
        }
    } else {
        uvec4 tw[3];
        [[unroll]] for (uint t = 0; t < 3u; t++) tw[t] = texelFetch(tb, clamp((e0 >> 2) + int(t), 0, last));
        uint ws = uint(e0) & 3u;
        [[unroll]] for (uint j = 0; j < 8u; j++) {
            uint a0 = tw[j / 4u][j % 4u], a1 = tw[(j + 1u) / 4u][(j + 1u) % 4u];
            uint a2 = tw[(j + 2u) / 4u][(j + 2u) % 4u], a3 = tw[(j + 3u) / 4u][(j + 3u) % 4u];
            rv[j] = uintBitsToFloat(ws == 0u ? a0 : ws == 1u ? a1 : ws == 2u ? a2 : a3);
        }
    }
}

// runWin returns elements e0 .. e0+WIN-1 of x as run8 does for 8: from
// the texels that hold them, shifted into place with selects, texels
// clamped into x.
void runWin(int e0, int last, out float rv[16]) {
    if (B16) {
        // Pairs of elements 2i, 2i+1 of the run (NP of them) come from words
        // ws+i and ws+i+1 of the texels.
        const uint NP = (WIN + 1u) / 2u, NT = (NP + 3u) / 4u + 1u;
        uvec4 tw[NT];
        [[unroll]] for (uint t = 0; t < NT; t++) tw[t] = texelFetch(tb, clamp((e0 >> 3) + int(t), 0, last));
        uint ws = (uint(e0) >> 1) & 3u;
        bool odd = (e0 & 1) != 0;
        uint wd[NP + 1u];
        [[unroll]] for (uint i = 0; i < NP + 1u; i++) {
            uint a0 = tw[i / 4u][i % 4u], a1 = tw[(i + 1u) / 4u][(i + 1u) % 4u];
            uint a2 = tw[(i + 2u) / 4u][(i + 2u) % 4u], a3 = tw[(i + 3u) / 4u][(i + 3u) % 4u];
            wd[i] = ws == 0u ? a0 : ws == 1u ? a1 : ws == 2u ? a2 : a3;
        }
        [[unroll]] for (uint i = 0; i < NP; i++) {
            vec2 h = unpackHalf2x16(odd ? (wd[i] >> 16) | (wd[i + 1u] << 16) : wd[i]);
            rv[2u * i] = h.x;
            rv[2u * i + 1u] = h.y;
        }
    } else {
        const uint NT = (WIN + 2u) / 4u + 1u;
        uvec4 tw[NT];
        [[unroll]] for (uint t = 0; t < NT; t++) tw[t] = texelFetch(tb, clamp((e0 >> 2) + int(t), 0, last));
        uint ws = uint(e0) & 3u;
        [[unroll]] for (uint j = 0; j < WIN; j++) {
            uint a0 = tw[j / 4u][j % 4u], a1 = tw[(j + 1u) / 4u][(j + 1u) % 4u];
            uint a2 = tw[(j + 2u) / 4u][(j + 2u) % 4u], a3 = tw[(j + 3u) / 4u][(j + 3u) % 4u];
            rv[j] = uintBitsToFloat(ws == 0u ? a0 : ws == 1u ? a1 : ws == 2u ? a2 : a3);
        }
    }
}

// storeNchw writes the tile of rows r0.., columns c0.. of group `batch`
// into the NCHW output at sample p.n0 + c0/(Ho*Wo): out = acc + bias[row],
// rounded once, as conv_permute does after storeTile's fp32 copy.
void storeNchw(uint r0, uint c0, uint batch) {
    if (r0 >= p.M || c0 >= p.N) return;
    uint rows = min(TM, p.M - r0);
    uint odt = FLAG_DT(FLAG_OUT_DT_SHIFT);
    bool half_ = odt != DT_F32;
    uint hw = p.ho * p.wo, n = c0 / hw, q = c0 - n * hw;
    uint cout = p.batches * p.M;
    [[dont_unroll]] for (uint i = 0; i < rows; i++) {
        float v[TN];
        [[unroll]] for (uint j = 0; j < TN; j++) v[j] = acc[0][j];
        [[unroll]] for (uint ii = 1; ii < TM; ii++) {
            [[unroll]] for (uint j = 0; j < TN; j++) v[j] = i == ii ? acc[ii][j] : v[j];
        }
        uint row = batch * p.M + r0 + i;
        float bsv = 0.0;
        if ((EPI_FLAGS & FLAG_BIAS) != 0u) {
            uint bdt = FLAG_DT(FLAG_BIAS_DT_SHIFT);
            bsv = elem_value(bias[elem_word(row, bdt)], row, bdt);
        }
        uint f0 = ((p.n0 + n) * cout + row) * hw + q;
        uint w[TN];
        if (odt == DT_BF16) {
            [[unroll]] for (uint j = 0; j < TN; j++) w[j] = f32_to_bf16(v[j] + bsv);
        } else if (half_) {
            [[unroll]] for (uint j = 0; j < TN; j++) w[j] = f32_to_f16(v[j] + bsv);
        } else {
            [[unroll]] for (uint j = 0; j < TN; j++) w[j] = floatBitsToUint(v[j] + bsv);
        }
#if defined(TIER_PACKED)
        if (half_) {
            [[unroll]] for (uint j = 0; j < TN; j += 2) o[(f0 + j) >> 1] = w[j] | (w[j + 1u] << 16);
        } else {
            [[unroll]] for (uint j = 0; j < TN; j++) o[f0 + j] = w[j];
        }
#else
        [[unroll]] for (uint j = 0; j < TN; j++) {
            uint f = f0 + j;
            o16[half_ ? f : 2u * f] = uint16_t(w[j] & 0xFFFFu);
            if (!half_) o16[2u * f + 1u] = uint16_t(w[j] >> 16);
        }
#endif
    }
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
        ao[t] = abase + min(r0 + i, p.M - 1u) * (K_RUNS ? p.kh * p.kw : p.K) + part;
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
        xb[j] = K_RUNS ? (batch * p.cg + p.n0 + n) * plane : ((p.n0 + n) * p.cin + batch * p.cg) * plane;
        y0[j] = int(oh) * p.sh - p.ph;
        x0[j] = int(ow) * p.sw - p.pw;
    }
    // A "channel" step of x (a sample with K_RUNS), and A's offset with K_RUNS.
    uint cstep = K_RUNS ? p.cin * plane : plane, aoff = 0u;
    uint coff = 0u, ki = 0u, kj = 0u;
    // The last texel of x.
    int last = textureSize(tb) - 1;

    for (uint k = 0; k < p.K; k += 8u) {
        [[unroll]] for (uint t = 0; t < NA; t++) aw[t] = fetchA(ao[t] + (K_RUNS ? aoff : k));
        float bv[8][TN];
        if (K_RUNS) {
            // Rows k .. k+7 of B are taps (ki, kj .. kj+7) of one channel.
            int dy = int(ki) * p.dh;
            if (TAPS > 0u) [[unroll]] for (uint r = 0; r < TN / TP; r++) {
                uint j = r * TP; // tap 0 of the kernel row
                int hi = y0[j] + dy, wi0 = x0[j] + int(kj);
                bool rowIn = hi >= 0 && hi < int(p.h);
                float rv[16];
                runWin(int(xb[j] + coff) + hi * int(p.w) + wi0, last, rv);
                float mv[WIN];
                [[unroll]] for (uint e = 0; e < WIN; e++) {
                    int wi = wi0 + int(e);
                    mv[e] = rowIn && wi >= 0 && wi < int(p.w) ? rv[e] : 0.0;
                }
                [[unroll]] for (uint t = 0; t < TP; t++) {
                    [[unroll]] for (uint kk = 0; kk < 8u; kk++) bv[kk][j + t] = mv[t + kk];
                }
            } else [[unroll]] for (uint j = 0; j < TN; j++) {
                int hi = y0[j] + dy, wi0 = x0[j] + int(kj);
                bool rowIn = hi >= 0 && hi < int(p.h);
                float rv[8];
                run8(int(xb[j] + coff) + hi * int(p.w) + wi0, last, rv);
                [[unroll]] for (uint kk = 0; kk < 8u; kk++) {
                    int wi = wi0 + int(kk);
                    bv[kk][j] = rowIn && wi >= 0 && wi < int(p.w) ? rv[kk] : 0.0;
                }
            }
            kj += 8u;
            bool wrap = kj == p.kw;
            kj = wrap ? 0u : kj;
            ki += wrap ? 1u : 0u;
            bool wrapH = ki == p.kh;
            ki = wrapH ? 0u : ki;
            coff += wrapH ? cstep : 0u;
            aoff += wrapH ? p.batches * p.batchA - p.kh * p.kw + 8u : 8u;
        } else [[unroll]] for (uint kk = 0; kk < 8u; kk++) {
            // Row k+kk of B is channel coff/plane, kernel tap (ki, kj): the
            // counters step with k (no per-k divisions, which CPU drivers
            // run lane by lane).
            int dy = int(ki) * p.dh, dx = int(kj) * p.dw;
            if (ROW_RUNS) {
                int hi0 = y0[0] + dy, wi0 = x0[0] + dx;
                bool rowIn = hi0 >= 0 && hi0 < int(p.h);
                // e0 may lie before x or past it where it reads padding:
                // texels are clamped into x, and what they give there masked.
                int e0 = int(xb[0] + coff) + hi0 * int(p.w) + wi0;
                float rv[TN];
                if (B16) {
                    uvec4 tw[RUN16];
                    [[unroll]] for (uint t = 0; t < RUN16; t++) tw[t] = texelFetch(tb, clamp((e0 >> 3) + int(t), 0, last));
                    uint ws = (uint(e0) >> 1) & 3u;
                    bool odd = (e0 & 1) != 0;
                    // word(i) is word ws+i of the fetched texels.
                    uint wd[TN / 2u + 1u];
                    [[unroll]] for (uint i = 0; i < TN / 2u + 1u; i++) {
                        uint a0 = tw[i / 4u][i % 4u], a1 = tw[(i + 1u) / 4u][(i + 1u) % 4u];
                        uint a2 = tw[(i + 2u) / 4u][(i + 2u) % 4u];
                        uint a3 = (i + 3u) / 4u < RUN16 ? tw[(i + 3u) / 4u][(i + 3u) % 4u] : 0u;
                        wd[i] = ws == 0u ? a0 : ws == 1u ? a1 : ws == 2u ? a2 : a3;
                    }
                    [[unroll]] for (uint i = 0; i < TN / 2u; i++) {
                        uint wv = odd ? (wd[i] >> 16) | (wd[i + 1u] << 16) : wd[i];
                        vec2 h = unpackHalf2x16(wv);
                        rv[2u * i] = h.x;
                        rv[2u * i + 1u] = h.y;
                    }
                } else {
                    uvec4 tw[RUN32];
                    [[unroll]] for (uint t = 0; t < RUN32; t++) tw[t] = texelFetch(tb, clamp((e0 >> 2) + int(t), 0, last));
                    uint ws = uint(e0) & 3u;
                    [[unroll]] for (uint j = 0; j < TN; j++) {
                        uint a0 = tw[j / 4u][j % 4u], a1 = tw[(j + 1u) / 4u][(j + 1u) % 4u];
                        uint a2 = tw[(j + 2u) / 4u][(j + 2u) % 4u], a3 = tw[(j + 3u) / 4u][(j + 3u) % 4u];
                        rv[j] = uintBitsToFloat(ws == 0u ? a0 : ws == 1u ? a1 : ws == 2u ? a2 : a3);
                    }
                }
                [[unroll]] for (uint j = 0; j < TN; j++) {
                    int wi = wi0 + int(j);
                    bv[kk][j] = rowIn && wi >= 0 && wi < int(p.w) ? rv[j] : 0.0;
                }
            } else {
                [[unroll]] for (uint j = 0; j < TN; j++) {
                    int hi = y0[j] + dy, wi = x0[j] + dx;
                    bool in_ = hi >= 0 && wi >= 0 && hi < int(p.h) && wi < int(p.w);
                    uint e = in_ ? xb[j] + coff + uint(hi) * p.w + uint(wi) : xb[j];
                    float v = xAt(e);
                    bv[kk][j] = in_ ? v : 0.0;
                }
            }
            kj++;
            bool wrap = kj == p.kw;
            kj = wrap ? 0u : kj;
            ki += wrap ? 1u : 0u;
            bool wrapH = ki == p.kh;
            ki = wrapH ? 0u : ki;
            coff += wrapH ? plane : 0u;
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
    if (NCHW_OUT) {
        storeNchw(r0, c0, batch);
    } else {
        storeTile(r0, c0, batch);
    }
}
