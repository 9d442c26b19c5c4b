#version 450
// tiers: packed storage16
// matmul_tex is the matmul for CPU drivers. lavapipe loads a storage buffer
// lane by lane, each 32-bit component in a loop with a bounds check (about
// 20 cycles a lane), but fetches texels with SIMD gathers: a uvec4 texel
// costs about a twentieth per byte. So A and B are read as uniform texel
// buffers, 8 fp16 or bf16 or 4 fp32 elements per fetch, and the kernel is
// shaped to fetch as few texels per FMA as the registers allow.
//
// The WG invocations of a workgroup share TM rows and take TN columns each
// (TN a multiple of 8). Every invocation fetches the rows' A values itself: the
// same texel in every lane costs no more than different ones, and
// broadcasting through subgroup operations costs more. Per block of 8 k
// steps an invocation fetches TM (fp16) A texels and TN B texels for
// 8*TM*TN FMAs. Each accumulator takes the whole k block at once, so it is
// loaded and stored once per block when the tile spills from registers.
//
// Layout conditions, checked by the caller: K and the contiguous dimensions
// of A and B are multiples of 8 (M for a transposed A, N for an untransposed
// B). Rows and columns past the edges are clamped, computed and dropped.
#define MATMUL_WIDE_OUT
#include "common.glsl"
#include "fp16.glsl"
#define MATMUL_TEXELS
#include "matmul.glsl"

#define A16 (A_MODE != MODE_F32)
#define B16 (B_MODE != MODE_F32)
// Texels per block of 8 k steps: A for all TM rows, B for the 8 columns.
#define NA (A16 ? TM : 2u * TM)
#define NB (B16 ? TN : 2u * TN)

uvec4 aw[A16 ? TM : 2u * TM];
uvec4 bw[B16 ? TN : 2u * TN];

float comp(uvec4 t, uint w) { return uintBitsToFloat(t[w]); }
// half_of is 16-bit element h of texel t, fp16 or bf16 (mode).
float half_of(uvec4 t, uint h, uint mode) {
    uint w = t[h >> 1];
    return mode == MODE_BF16 ? bf16_at(w, h) : unpackHalf2x16(w >> ((h & 1u) << 4)).x;
}

// aAt is A(r0+i, k+kk) of the fetched block. Untransposed, a texel holds
// consecutive k of one row; transposed, consecutive rows at one k.
float aAt(uint i, uint kk) {
    if (A16) return TRANS_A ? half_of(aw[kk * (TM / 8u) + i / 8u], i % 8u, A_MODE) : half_of(aw[i], kk, A_MODE);
    return TRANS_A ? comp(aw[kk * (TM / 4u) + i / 4u], i % 4u) : comp(aw[2u * i + kk / 4u], kk % 4u);
}

// bAt is B(k+kk, c0+j): untransposed a texel holds consecutive columns at
// one k, transposed consecutive k of one column.
float bAt(uint kk, uint j) {
    if (B16) return TRANS_B ? half_of(bw[j], kk, B_MODE) : half_of(bw[kk * (TN / 8u) + j / 8u], j % 8u, B_MODE);
    return TRANS_B ? comp(bw[2u * j + kk / 4u], kk % 4u) : comp(bw[kk * (TN / 4u) + j / 4u], j % 4u);
}

uvec4 fetchA(uint e) { return texelFetch(ta, int(e / (A16 ? 8u : 4u))); }
uvec4 fetchB(uint e) { return texelFetch(tb, int(e / (B16 ? 8u : 4u))); }

void main() {
    uint lane = gl_LocalInvocationID.x;
    uint r0 = gl_WorkGroupID.y * TM;
    uint c0 = (gl_WorkGroupID.x * gl_WorkGroupSize.x + lane) * TN;
    uint batch = p.batch0 + gl_WorkGroupID.z;
    uint abase = batch * p.batchA, bbase = batch * p.batchB;
    clearAcc();

    // Element offsets of each texel of the block at k = 0; a k step moves A
    // by 1 (or M, transposed) and B by N (or 1, transposed) per k.
    uint ao[NA], bo[NB];
    [[unroll]] for (uint t = 0; t < NA; t++) {
        if (TRANS_A) { // texel t: k + t / groups, rows from group t % groups
            uint groups = A16 ? TM / 8u : TM / 4u, w = A16 ? 8u : 4u;
            ao[t] = abase + (t / groups) * p.M + min(r0 + (t % groups) * w, p.M - w);
        } else { // texel t: row t (fp16) or half a row's block (fp32)
            uint i = A16 ? t : t / 2u, part = A16 ? 0u : (t % 2u) * 4u;
            ao[t] = abase + min(r0 + i, p.M - 1u) * p.K + part;
        }
    }
    [[unroll]] for (uint t = 0; t < NB; t++) {
        if (TRANS_B) { // column j = t (fp16) or t / 2, clamped by itself
            uint j = B16 ? t : t / 2u, part = B16 ? 0u : (t % 2u) * 4u;
            bo[t] = bbase + min(c0 + j, p.N - 1u) * p.K + part;
        } else { // row kk of the TN columns, 8-column groups clamped (N % 8 == 0)
            uint per = B16 ? TN / 8u : TN / 4u, kk = t / per, part = (t % per) * (B16 ? 8u : 4u);
            bo[t] = bbase + kk * p.N + min(c0 + (part & ~7u), p.N - 8u) + (part & 7u);
        }
    }
    uint astep = TRANS_A ? p.M : 1u, bstep = TRANS_B ? 1u : p.N;

    for (uint k = 0; k < p.K; k += 8u) {
        [[unroll]] for (uint t = 0; t < NA; t++) aw[t] = fetchA(ao[t] + k * astep);
        [[unroll]] for (uint t = 0; t < NB; t++) bw[t] = fetchB(bo[t] + k * bstep);
        float bv[8][TN];
        [[unroll]] for (uint kk = 0; kk < 8u; kk++) {
            [[unroll]] for (uint j = 0; j < TN; j++) bv[kk][j] = bAt(kk, j);
        }
        // A is converted once a block, and the tile is walked a pair of
        // columns at a time over every row: the pair's 16 B values stay in
        // registers while each row's 8 A values and 2 accumulators are
        // loaded and stored, 12 loads and stores per 16 multiply-adds where
        // a row at a time over every column took 10 per 8 (lavapipe spills
        // the tile, A and B, and splits each fma into a multiply and an
        // add). fp16 1024^3 (tools/bench, lavapipe, alternated): 58-60 ->
        // 61-65 GFLOP/s. conv_tex, with twice the rows, lost 10% this way.
        float av[TM][8];
        [[unroll]] for (uint i = 0; i < TM; i++) {
            [[unroll]] for (uint kk = 0; kk < 8u; kk++) av[i][kk] = aAt(i, kk);
        }
        [[unroll]] for (uint j0 = 0; j0 < TN; j0 += 2u) { // TN is a multiple of 8
            [[unroll]] for (uint i = 0; i < TM; i++) {
                [[unroll]] for (uint jj = 0; jj < 2u; jj++) { // a constant trip count: the driver unrolls it
                    float s = acc[i][j0 + jj];
                    [[unroll]] for (uint kk = 0; kk < 8u; kk++) s = fma(av[i][kk], bv[kk][j0 + jj], s);
                    acc[i][j0 + jj] = s;
                }
            }
        }
    }
    storeTile(r0, c0, batch);
}
