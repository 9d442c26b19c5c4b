// The body of matmul_coop and matmul_coop_bf16, the matmuls on cooperative
// matrices (VK_KHR_cooperative_matrix, fp16 or bf16 inputs, fp32
// accumulators, any subgroup shape CM x CN x CK a device lists whose sides
// are multiples of 8), and of matmul_coop_emu, the same kernel with the
// cooperative-matrix operations emulated in plain GLSL (COOP_EMU), so that
// devices without them can check its indexing, staging, edges and epilogue.
// The shape is three specialization constants: one binary serves the 8x8x8
// of Mesa's lavapipe, NVIDIA's 16x16x16 and 16x8x16 and any other.
//
// A workgroup of WARPS_M x WARPS_N subgroups of SG invocations computes a
// BM x BN output tile; each subgroup a (BM/WARPS_M) x (BN/WARPS_N) part of it,
// FM x FN fragments of CM x CN. Per k step of BK, each invocation loads its
// share of the A (BM x BK) and B (BK x BN) tiles from global memory into
// registers while the subgroups multiply the previous tiles, then stores them
// into the other half of a double-buffered shared array: one barrier per k
// step. Tiles are kept in shared memory in the operand's own orientation (A
// [m][k], or [k][m] when transposed; B [k][n], or [n][k] when transposed),
// with 8 elements of padding per row against bank conflicts; transposed
// operands are loaded column-major. Fragments start on whole uvec4s (8
// elements), hence sides that are multiples of 8.
//
// Global loads take 8 elements at once (uvec4) when the operand's mode is
// MODE_F16X8: its contiguous dimension a multiple of 8, so that every
// 8-element chunk is aligned and lies in one row (and every batch starts
// on a chunk). Past K a chunk
// is zero; rows or columns past M or N are clamped to the last ones, computed
// and dropped. Otherwise each element is loaded alone, zero outside. fp16
// and bf16 are both 16-bit patterns here, and zero is zero in both.
//
// The epilogue goes through shared memory one fragment at a time: a subgroup
// stores a fragment (fp32) in its slice of the shared array, then each
// invocation takes CM*CN/SG consecutive values of one row and hands them to
// storeTile (matmul.glsl), which applies alpha, beta*C and the bias, rounds
// and stores what lies inside the output. TM is 1 and TN is CM*CN/SG.
#extension GL_KHR_shader_subgroup_basic : require
#if !defined(COOP_EMU)
#extension GL_KHR_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#if defined(COOP_BF16)
#extension GL_EXT_bfloat16 : require
#define COOP_T bfloat16_t
#else
#define COOP_T float16_t
#endif
#endif
#include "common.glsl"
#include "fp16.glsl"
#define MATMUL_VEC4
#include "matmul.glsl"
#if defined(COOP_CM2)
#include "matmul_cm2.glsl"
#endif

// Spec constants: 0 the workgroup size (WG below), 1 and 2 TM = 1 and
// TN = CM * CN / SG, 4 and 5 the transposes, 6 and 7 the operand modes
// (MODE_F16 or MODE_F16X8), and:
layout(constant_id = 8) const uint WARPS_M = 2; // subgroups along M
layout(constant_id = 9) const uint SG = 32;     // invocations per subgroup
layout(constant_id = 10) const uint BM = 128;
layout(constant_id = 11) const uint BN = 128;
layout(constant_id = 12) const uint BK = 32; // a multiple of CK, at most BM and BN
layout(constant_id = 14) const uint WARPS_N = 4; // subgroups along N
// The subgroup shape: fragments of A are CM x CK, of B CK x CN.
layout(constant_id = 15) const uint CM = 16;
layout(constant_id = 16) const uint CN = 16;
layout(constant_id = 17) const uint CK = 16;
#if defined(COOP_EMU)
// The emulation's inputs: fp16, or bf16.
layout(constant_id = 18) const bool EMU_BF16 = false;
#endif

#define MODE_F16X8 3u // fp16, 8 neighbours along the contiguous dimension per uvec4
#define VEC_A (A_MODE == MODE_F16X8)
#define VEC_B (B_MODE == MODE_F16X8)

const uint FM = BM / WARPS_M / CM; // fragments per subgroup along M
const uint FN = BN / WARPS_N / CN; // and along N
const uint FRAG = CM * CN; // accumulator elements per fragment
const uint WG = WARPS_M * WARPS_N * SG;
// Row strides of the shared tiles in uvec4 (8 fp16), padding included.
const uint SA = BK / 8u + 1u;  // A [m][k]
const uint SAT = BM / 8u + 1u; // A transposed, [k][m]
const uint SB = BN / 8u + 1u;  // B [k][n]
const uint SBT = BK / 8u + 1u; // B transposed, [n][k]
// One stage: A then B, each sized for the larger of its two layouts
// (BM, BN >= BK).
const uint ASIZE = BM * SA;
const uint STAGE = ASIZE + BN * SBT;
// Chunks of 8 fp16 per invocation and k step.
const uint CA = BM * BK / 8u / WG;
const uint CB = BN * BK / 8u / WG;

shared uvec4 sh[2u * STAGE];

#if defined(COOP_EMU)
// The emulated subgroup is SG consecutive invocations; lane l holds elements
// l, l + SG, ... (row-major) of each accumulator, and an A or B fragment is
// just where its tile starts in sh (the tile stays put until the next barrier).
#define WARP (gl_LocalInvocationID.x / SG)
#define LANE (gl_LocalInvocationID.x % SG)
const uint EMU_E = FRAG / SG;
float cacc[FM * FN * EMU_E];
uint fa[FM];
uint fb[FN];

// emuHalf is element (r, c) of the 16-bit matrix at sh[off], as a
// cooperative load with this stride (in uvec4) and layout reads it.
float emuHalf(uint off, uint stride, bool colMajor, uint r, uint c) {
    uint h = colMajor ? (off + c * stride) * 8u + r : (off + r * stride) * 8u + c;
    uint bits = (sh[h >> 3u][(h >> 1u) & 3u] >> ((h & 1u) << 4u)) & 0xFFFFu;
    return EMU_BF16 ? uintBitsToFloat(bits << 16u) : unpackHalf2x16(bits).x;
}
#else
#define WARP gl_SubgroupID
#define LANE gl_SubgroupInvocationID
#define ACC_T coopmat<float, gl_ScopeSubgroup, CM, CN, gl_MatrixUseAccumulator>
ACC_T cacc[FM * FN];
coopmat<COOP_T, gl_ScopeSubgroup, CM, CK, gl_MatrixUseA> fa[FM];
coopmat<COOP_T, gl_ScopeSubgroup, CK, CN, gl_MatrixUseB> fb[FN];
#endif

uvec4 ra[CA], rb[CB]; // the next k step's chunks

// halfA and halfB return the bits of fp16 element e of A or B.
uint halfA(uint e) { return (a4[e >> 3u][(e >> 1u) & 3u] >> ((e & 1u) << 4u)) & 0xFFFFu; }
uint halfB(uint e) { return (b4[e >> 3u][(e >> 1u) & 3u] >> ((e & 1u) << 4u)) & 0xFFFFu; }

// loadA fetches this invocation's chunks of the A tile at k0. Chunk c is
// 8 elements along A's contiguous dimension: K, or M when transposed.
void loadA(uint rowBase, uint k0, uint base) {
    [[unroll]] for (uint t = 0; t < CA; t++) {
        uint c = t * WG + gl_LocalInvocationID.x;
        uint r, k; // the chunk's first element
        if (TRANS_A) {
            k = k0 + c / (BM / 8u);
            r = rowBase + (c % (BM / 8u)) * 8u;
        } else {
            r = rowBase + c / (BK / 8u);
            k = k0 + (c % (BK / 8u)) * 8u;
        }
        uvec4 v = uvec4(0u);
        if (VEC_A) {
            if (k < p.K) v = a4[(base + (TRANS_A ? k * p.M + min(r, p.M - 8u) : min(r, p.M - 1u) * p.K + k)) >> 3u];
        } else {
            uint h[8];
            [[unroll]] for (uint i = 0; i < 8u; i++) {
                uint ri = TRANS_A ? r + i : r, ki = TRANS_A ? k : k + i;
                h[i] = ri < p.M && ki < p.K ? halfA(base + (TRANS_A ? ki * p.M + ri : ri * p.K + ki)) : 0u;
            }
            v = uvec4(h[0] | h[1] << 16u, h[2] | h[3] << 16u, h[4] | h[5] << 16u, h[6] | h[7] << 16u);
        }
        ra[t] = v;
    }
}

// loadB is loadA for B: chunks along N, or K when transposed.
void loadB(uint colBase, uint k0, uint base) {
    [[unroll]] for (uint t = 0; t < CB; t++) {
        uint c = t * WG + gl_LocalInvocationID.x;
        uint n, k;
        if (TRANS_B) {
            n = colBase + c / (BK / 8u);
            k = k0 + (c % (BK / 8u)) * 8u;
        } else {
            k = k0 + c / (BN / 8u);
            n = colBase + (c % (BN / 8u)) * 8u;
        }
        uvec4 v = uvec4(0u);
        if (VEC_B) {
            if (k < p.K) v = b4[(base + (TRANS_B ? min(n, p.N - 1u) * p.K + k : k * p.N + min(n, p.N - 8u))) >> 3u];
        } else {
            uint h[8];
            [[unroll]] for (uint i = 0; i < 8u; i++) {
                uint ni = TRANS_B ? n : n + i, ki = TRANS_B ? k + i : k;
                h[i] = ni < p.N && ki < p.K ? halfB(base + (TRANS_B ? ni * p.K + ki : ki * p.N + ni)) : 0u;
            }
            v = uvec4(h[0] | h[1] << 16u, h[2] | h[3] << 16u, h[4] | h[5] << 16u, h[6] | h[7] << 16u);
        }
        rb[t] = v;
    }
}

// stash stores the fetched chunks into stage s of the shared tiles.
void stash(uint s) {
    uint a0 = s * STAGE, b0 = a0 + ASIZE;
    [[unroll]] for (uint t = 0; t < CA; t++) {
        uint c = t * WG + gl_LocalInvocationID.x;
        sh[a0 + (TRANS_A ? (c / (BM / 8u)) * SAT + c % (BM / 8u) : (c / (BK / 8u)) * SA + c % (BK / 8u))] = ra[t];
    }
    [[unroll]] for (uint t = 0; t < CB; t++) {
        uint c = t * WG + gl_LocalInvocationID.x;
        sh[b0 + (TRANS_B ? (c / (BK / 8u)) * SBT + c % (BK / 8u) : (c / (BN / 8u)) * SB + c % (BN / 8u))] = rb[t];
    }
}

// multiply adds the products of stage s's tiles to the accumulators of the
// subgroup's part (rows wm0.., columns wn0.. of the workgroup tile).
void multiply(uint s, uint wm0, uint wn0) {
    uint a0 = s * STAGE, b0 = a0 + ASIZE;
    [[unroll]] for (uint ks = 0; ks < BK; ks += CK) {
        [[unroll]] for (uint i = 0; i < FM; i++) {
            uint m = wm0 + CM * i;
#if defined(COOP_EMU)
            fa[i] = TRANS_A ? a0 + ks * SAT + m / 8u : a0 + m * SA + ks / 8u;
#else
            if (TRANS_A) {
                coopMatLoad(fa[i], sh, a0 + ks * SAT + m / 8u, SAT, gl_CooperativeMatrixLayoutColumnMajor);
            } else {
                coopMatLoad(fa[i], sh, a0 + m * SA + ks / 8u, SA, gl_CooperativeMatrixLayoutRowMajor);
            }
#endif
        }
        [[unroll]] for (uint j = 0; j < FN; j++) {
            uint n = wn0 + CN * j;
#if defined(COOP_EMU)
            fb[j] = TRANS_B ? b0 + n * SBT + ks / 8u : b0 + ks * SB + n / 8u;
#else
            if (TRANS_B) {
                coopMatLoad(fb[j], sh, b0 + n * SBT + ks / 8u, SBT, gl_CooperativeMatrixLayoutColumnMajor);
            } else {
                coopMatLoad(fb[j], sh, b0 + ks * SB + n / 8u, SB, gl_CooperativeMatrixLayoutRowMajor);
            }
#endif
        }
        [[unroll]] for (uint i = 0; i < FM; i++) {
            [[unroll]] for (uint j = 0; j < FN; j++) {
#if defined(COOP_EMU)
                uint sa = TRANS_A ? SAT : SA, sb = TRANS_B ? SBT : SB;
                [[dont_unroll]] for (uint e = 0; e < EMU_E; e++) {
                    uint idx = e * SG + LANE, r = idx / CN, c = idx % CN;
                    float v = cacc[(i * FN + j) * EMU_E + e];
                    for (uint kk = 0; kk < CK; kk++) {
                        v = fma(emuHalf(fa[i], sa, TRANS_A, r, kk), emuHalf(fb[j], sb, TRANS_B, kk, c), v);
                    }
                    cacc[(i * FN + j) * EMU_E + e] = v;
                }
#else
                cacc[i * FN + j] = coopMatMulAdd(fa[i], fb[j], cacc[i * FN + j]);
#endif
            }
        }
    }
}

void main() {
    uint rowBase = gl_WorkGroupID.y * BM, colBase = gl_WorkGroupID.x * BN;
    uint batch = p.batch0 + gl_WorkGroupID.z;
    uint baseA = batch * p.batchA, baseB = batch * p.batchB;
    uint warp = WARP;
    uint wm0 = (warp / WARPS_N) * (BM / WARPS_M), wn0 = (warp % WARPS_N) * (BN / WARPS_N);

    [[unroll]] for (uint f = 0; f < FM * FN; f++) {
#if defined(COOP_EMU)
        [[unroll]] for (uint e = 0; e < EMU_E; e++) cacc[f * EMU_E + e] = 0.0;
#else
        cacc[f] = ACC_T(0.0);
#endif
    }

    uint steps = (p.K + BK - 1u) / BK;
    loadA(rowBase, 0u, baseA);
    loadB(colBase, 0u, baseB);
    stash(0u);
    barrier();
    for (uint t = 0; t < steps; t++) {
        bool more = t + 1u < steps;
        if (more) { // in flight while the tensor cores work
            loadA(rowBase, (t + 1u) * BK, baseA);
            loadB(colBase, (t + 1u) * BK, baseB);
        }
        multiply(t & 1u, wm0, wn0);
        if (more) stash((t + 1u) & 1u);
        barrier();
    }

#if defined(COOP_CM2)
    // Epilogue: each element from the accumulator to memory (matmul_cm2.glsl).
    [[unroll]] for (uint i = 0; i < FM; i++) {
        [[unroll]] for (uint j = 0; j < FN; j++) {
            coopMatPerElementNV(cacc[i * FN + j], cacc[i * FN + j], cm2_store,
                                rowBase + wm0 + CM * i, colBase + wn0 + CN * j, batch);
        }
    }
}
#else
    // Epilogue: fragment by fragment through the subgroup's FRAG / 4 uvec4
    // (FRAG fp32) of sh; the last barrier of the loop freed the tiles.
    uint lane = LANE;
    uint cols = CN / TN; // invocations per fragment row
    uint fr = lane / cols, fc = (lane % cols) * TN;
    uint slot = warp * (FRAG / 4u);
    [[unroll]] for (uint i = 0; i < FM; i++) {
        [[unroll]] for (uint j = 0; j < FN; j++) {
#if defined(COOP_EMU)
            [[unroll]] for (uint e = 0; e < EMU_E; e++) {
                uint idx = e * SG + lane;
                sh[slot + idx / 4u][idx % 4u] = floatBitsToUint(cacc[(i * FN + j) * EMU_E + e]);
            }
#else
            coopMatStore(cacc[i * FN + j], sh, slot, CN / 4u, gl_CooperativeMatrixLayoutRowMajor);
#endif
            barrier();
            [[unroll]] for (uint q = 0; q < TN; q++) {
                uint idx = fr * CN + fc + q;
                acc[0][q] = uintBitsToFloat(sh[slot + idx / 4u][idx % 4u]);
            }
            barrier();
            storeTile(rowBase + wm0 + CM * i + fr, colBase + wn0 + CN * j + fc, batch);
        }
    }
}
#endif
