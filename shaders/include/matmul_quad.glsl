// The body of matmul_quad and its pair forms (see matmul_quad.comp).
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_quad : require
#define MATMUL_TM 8
#define MATMUL_TN 8
#include "common.glsl"
#include "fp16.glsl"
#include "matmul.glsl"

// The driver's unpackHalf2x16 is exact for fp16 inputs; the deterministic
// mode, which decodes in integer code, never runs this kernel (its integer
// decoder inlined at every load made SwiftShader's compile take minutes).
// elemA and elemB read element e of A or B, fp32, fp16 (pairs are read a
// half at a time) or bf16, with one load whatever the encoding. Written so
// that glslc emits selects, not branches (which SwiftShader compiles
// slowly; a nested ?: on the mode became branches and took its compile
// from a second to minutes): one load at a computed index, every decoding,
// and plain selects on booleans worked out once.
float word_elem(uint w, uint e, bool half_, bool bf) {
    uint hw = w >> ((e & 1u) << 4);
    float h = unpackHalf2x16(hw).x;
    float b16 = uintBitsToFloat(hw << 16);
    float f = uintBitsToFloat(w);
    float v = bf ? b16 : h;
    return half_ ? v : f;
}
// pair_elems decodes both 16-bit elements of word w, the low half first.
vec2 pair_elems(uint w, bool bf) {
    vec2 h = unpackHalf2x16(w);
    vec2 b16 = vec2(uintBitsToFloat(w << 16), uintBitsToFloat(w & 0xFFFF0000u));
    return bf ? b16 : h;
}
float elemA(uint e, bool half_, bool bf) { return word_elem(a[e >> (half_ ? 1u : 0u)], e, half_, bf); }
float elemB(uint e, bool half_, bool bf) { return word_elem(b[e >> (half_ ? 1u : 0u)], e, half_, bf); }

// LOAD_B2(kb) reads B(kb, c0+j) into b0[j] and B(kb+1, c0+j) into b1[j]
// (kb even). QUAD_PAIRS_N: B(kb, c) and B(kb, c+1) share a word (B
// untransposed, N even; a column past N is clamped to N-1, whose word is
// in the row). QUAD_PAIRS_K: B(kb, c) and B(kb+1, c) do (B transposed, K
// even).
#if defined(QUAD_PAIRS_N)
#define LOAD_B2(kb) \
    [[unroll]] for (uint j = 0; j < TN; j += 2) { \
        vec2 u = pair_elems(b[(bo[j] + (kb) * p.N) >> 1], bfb), v = pair_elems(b[(bo[j] + ((kb) + 1u) * p.N) >> 1], bfb); \
        b0[j] = u.x; b0[j + 1] = u.y; b1[j] = v.x; b1[j + 1] = v.y; \
    }
#elif defined(QUAD_PAIRS_K)
#define LOAD_B2(kb) \
    [[unroll]] for (uint j = 0; j < TN; j++) { \
        vec2 u = pair_elems(b[(bo[j] + (kb)) >> 1], bfb); \
        b0[j] = u.x; b1[j] = u.y; \
    }
#endif

// storeElems is storeTile one element at a time in a loop that is not
// unrolled: storeTile's unrolled rows took SwiftShader minutes to compile.
// The dynamic index into acc costs a per-lane load, once per output. In the
// packed tier every 16-bit result goes through store_half, whose atomics
// commute with the neighbouring invocation's.
void storeElems(uint r0, uint c0, uint batch) {
    uint odt = FLAG_DT(FLAG_OUT_DT_SHIFT);
#if defined(TIER_PACKED)
    uint total = p.batches * p.M * p.N;
#endif
    [[dont_unroll]] for (uint t = 0; t < TM * TN; t++) {
        uint i = t / TN, j = t % TN;
        uint r = r0 + i, c = c0 + j;
        if (r >= p.M || c >= p.N) continue;
        float bsv = 0.0;
        if ((p.flags & FLAG_BIAS) != 0u) {
            uint bdt = FLAG_DT(FLAG_BIAS_DT_SHIFT);
            bsv = elem_value(bias[elem_word(c, bdt)], c, bdt);
        }
        uint f = (batch * p.M + r) * p.N + c;
        float v = finish(acc[i][j], f, bsv);
        uint w = odt == DT_BF16 ? f32_to_bf16(v) : odt == DT_F16 ? f32_to_f16(v) : floatBitsToUint(v);
#if defined(TIER_PACKED)
        if (odt == DT_F32) {
            o[f] = w;
        } else {
            store_half(f, w, total);
        }
#else
        if (odt == DT_F32) {
            o16[2u * f] = uint16_t(w & 0xFFFFu);
            o16[2u * f + 1u] = uint16_t(w >> 16);
        } else {
            o16[f] = uint16_t(w);
        }
#endif
    }
}

void main() {
    uint lane = gl_SubgroupInvocationID & 3u;
    uint quad = gl_SubgroupID * (gl_SubgroupSize >> 2) + (gl_SubgroupInvocationID >> 2);
    uint r0 = (gl_WorkGroupID.y * (gl_WorkGroupSize.x >> 2) + quad) * TM;
    uint c0 = (gl_WorkGroupID.x * 4u + lane) * TN;
    uint batch = p.batch0 + gl_WorkGroupID.z;
    // No early return: a quad broadcast needs its four lanes.
    clearAcc();
    // A(r, k) is element r*sar + k*sak of its batch, B(k, c) k*sbk + c*sbc.
    // The layout is read once: DYN's flags are a branch per use.
    bool fa = AMODE != MODE_F32, fb = BMODE != MODE_F32;
    bool bfa = AMODE == MODE_BF16, bfb = BMODE == MODE_BF16;
    uint sar = TA ? 1u : p.K, sak = TA ? p.M : 1u;
#if defined(QUAD_PAIRS_N)
    const bool tb = false;
#elif defined(QUAD_PAIRS_K)
    const bool tb = true;
#else
    bool tb = TB;
#endif
    uint sbk = tb ? 1u : p.N, sbc = tb ? p.K : 1u;
    uint ao[TM], bo[TN];
    [[unroll]] for (uint i = 0; i < TM; i++) ao[i] = batch * p.batchA + min(r0 + i, p.M - 1u) * sar;
    [[unroll]] for (uint j = 0; j < TN; j++) bo[j] = batch * p.batchB + min(c0 + j, p.N - 1u) * sbc;

    uint k = 0;
    for (; k + 4u <= p.K; k += 4u) {
        float al[TM]; // A(r0+i, k+lane)
        uint ka = (k + lane) * sak;
        [[unroll]] for (uint i = 0; i < TM; i++) al[i] = elemA(ao[i] + ka, fa, bfa);
#if defined(QUAD_PAIRS_N) || defined(QUAD_PAIRS_K)
// STEP2 adds the products of k+k0 and k+k1 = k+k0+1 (k0 even, a
// constant); each accumulator takes k0's product, then k1's, as with STEP.
#define STEP2(k0, k1) { \
            float b0[TN], b1[TN]; \
            LOAD_B2(k + k0) \
            [[unroll]] for (uint i = 0; i < TM; i++) { \
                float x0 = subgroupQuadBroadcast(al[i], k0), x1 = subgroupQuadBroadcast(al[i], k1); \
                [[unroll]] for (uint j = 0; j < TN; j++) acc[i][j] = fma(x0, b0[j], acc[i][j]); \
                [[unroll]] for (uint j = 0; j < TN; j++) acc[i][j] = fma(x1, b1[j], acc[i][j]); \
            } \
        }
        STEP2(0u, 1u) STEP2(2u, 3u)
#undef STEP2
#else
// STEP adds the products of k+kk: kk must be a constant. (STEP2 with B's
// elements loaded one by one took SwiftShader's compiler past 24 GB.)
#define STEP(kk) { \
            float bk[TN]; \
            [[unroll]] for (uint j = 0; j < TN; j++) bk[j] = elemB(bo[j] + (k + kk) * sbk, fb, bfb); \
            [[unroll]] for (uint i = 0; i < TM; i++) { \
                float x = subgroupQuadBroadcast(al[i], kk); \
                [[unroll]] for (uint j = 0; j < TN; j++) acc[i][j] = fma(x, bk[j], acc[i][j]); \
            } \
        }
        STEP(0u) STEP(1u) STEP(2u) STEP(3u)
#undef STEP
#endif
    }
    for (; k < p.K; k++) { // the last K % 4 steps, each lane on its own
        float bk[TN];
        [[unroll]] for (uint j = 0; j < TN; j++) bk[j] = elemB(bo[j] + k * sbk, fb, bfb);
        [[unroll]] for (uint i = 0; i < TM; i++) {
            float x = elemA(ao[i] + k * sak, fa, bfa);
            [[unroll]] for (uint j = 0; j < TN; j++) acc[i][j] = fma(x, bk[j], acc[i][j]);
        }
    }
    storeElems(r0, c0, batch);
}
