// Shared part of the matmul kernels (matmul_reg, matmul_sg, matmul_shared):
// bindings, push constants, operand loads and the epilogue
//   out = alpha * acc + beta * C + bias
// that rounds and stores each invocation's TM x TN accumulator tile.
//
// Operands are read as 32-bit words in every tier: fp16 A and B come two per
// load. On lavapipe every load instruction costs the same whatever its width,
// so pairs halve the kernel's dominant cost. unpackHalf2x16 is exact for the
// inputs (fp16 -> fp32 loses nothing); bf16 operands are read one element per
// load, their bits shifted into the top of an fp32 (exact too). C, the bias and the output may each
// be any dtype of dtype.glsl: their codes come in the push constants' flags,
// and the epilogue converts with dtype.glsl's integer code (outputs rounded
// to nearest even). The tiers differ in the output: storage16 stores 16-bit
// halves, packed stores words and must share some with another invocation
// (storeTile).
#ifndef VKAMP_MATMUL_GLSL
#define VKAMP_MATMUL_GLSL

#extension GL_EXT_control_flow_attributes : require

#include "dtype.glsl"
#include "fp16.glsl"
#include "det.glsl"

// Operand encodings (A_MODE, B_MODE).
#define MODE_F32 0u
#define MODE_F16 1u   // fp16, one element per load
#define MODE_F16X2 2u // fp16, the two halves of a word are neighbours along
                      // the operand's contiguous dimension
#define MODE_BF16 3u  // bf16, one element per load (matmul_coop's 3 is
                      // MODE_F16X8: it never takes bf16)

// Per-invocation tile and k step: spec constants, or compile-time constants
// where the kernel defines MATMUL_TM (matmul_quad: loops over them must be
// unrolled in the SPIR-V itself, see there).
#if defined(MATMUL_TM)
const uint TM = MATMUL_TM;
const uint TN = MATMUL_TN;
const uint KK = 4;
#else
layout(constant_id = 1) const uint TM = 4;
layout(constant_id = 2) const uint TN = 4;
layout(constant_id = 3) const uint KK = 4;
#endif
// Transposes and operand encodings are spec constants, or with DYN push
// constant flags: one generic pipeline then serves every layout, which the
// runtime uses for small problems (CPU drivers take about a second to
// compile each specialised one).
layout(constant_id = 4) const bool TRANS_A = false;
layout(constant_id = 5) const bool TRANS_B = false;
layout(constant_id = 6) const uint A_MODE = MODE_F32;
layout(constant_id = 7) const uint B_MODE = MODE_F32;
layout(constant_id = 13) const bool DYN = false;

// p.flags: whether C and the bias are read, the transposes and operand
// encodings (read only with DYN), and the dtype codes (DT_*, 2 bits each) of
// C, the bias and the output. tensor/matmul.go mirrors these.
#define FLAG_C 1u
#define FLAG_BIAS 2u
#define FLAG_TRANS_A 4u
#define FLAG_TRANS_B 8u
#define FLAG_A_MODE_SHIFT 8u
#define FLAG_B_MODE_SHIFT 10u
#define FLAG_C_DT_SHIFT 16u
#define FLAG_BIAS_DT_SHIFT 18u
#define FLAG_OUT_DT_SHIFT 20u
// EPI, in the texel kernels (which CPU drivers run), is EPI_KNOWN and the
// epilogue's flags (FLAG_C, FLAG_BIAS and the dtypes of C, the bias and the
// output) as the pipeline's constant, 0 to take them from p.flags. lavapipe
// runs both sides of a branch, the lanes masked, so flags read at run time
// cost every output C's load and decode whether C is read or not: a
// constant compiles the unused code out. lavapipe (go test -bench
// 'MatMul(GPT|MLP)', medians of 4 alternated runs): the GPT's forward
// products (K = 128) 0.84-0.93x the time, the MLP's weight gradient
// (256x784, K = 64) 0.89x; products of longer K 0.97-1.02x.
#if defined(MATMUL_TEXELS)
layout(constant_id = 10) const uint EPI = 0u;
#else
const uint EPI = 0u;
#endif
#define EPI_KNOWN 0x80000000u
#define EPI_FLAGS ((EPI & EPI_KNOWN) != 0u ? EPI : p.flags)
#define FLAG_DT(shift) ((EPI_FLAGS >> (shift)) & 3u)

#define TA (DYN ? (p.flags & FLAG_TRANS_A) != 0u : TRANS_A)
#define TB (DYN ? (p.flags & FLAG_TRANS_B) != 0u : TRANS_B)
#define AMODE (DYN ? (p.flags >> FLAG_A_MODE_SHIFT) & 3u : A_MODE)
#define BMODE (DYN ? (p.flags >> FLAG_B_MODE_SHIFT) & 3u : B_MODE)

#if defined(MATMUL_CONV)
layout(push_constant) uniform MatmulConvPush {
#else
layout(push_constant) uniform MatmulPush {
#endif
    uint M, N, K;
    uint batchA, batchB; // elements between batches; batchB is 0 for shared weights
    uint batch0;         // batch of gl_WorkGroupID.z == 0
    uint batches;        // in the whole output
    uint flags;
    float alpha, beta;
#if defined(MATMUL_CONV)
    // conv_tex: B is gathered from the image x (see conv_tex.comp).
    uint n0;     // first sample of the dispatch
    uint cin;    // input channels
    uint h, w;   // input size
    uint ho, wo; // output size
    uint kh, kw; // kernel size
    int sh, sw;  // stride
    int ph, pw;  // padding
    int dh, dw;  // dilation
    uint cg;     // input channels per group
#endif
} p;

#if defined(MATMUL_TEXELS)
// A and B as uniform texel buffers of uvec4: 8 16-bit or 4 fp32 elements per
// fetch.
layout(set = 0, binding = 0) uniform usamplerBuffer ta;
layout(set = 0, binding = 1) uniform usamplerBuffer tb;
#elif defined(MATMUL_VEC4)
// A and B as uvec4 words, 8 fp16 elements per load (matmul_coop).
layout(set = 0, binding = 0) readonly buffer BufA { uvec4 a4[]; };
layout(set = 0, binding = 1) readonly buffer BufB { uvec4 b4[]; };
#elif defined(MATMUL_ELEM)
// A and B as arrays of their element type MATMUL_ELEM (matmul_cm2_wg's
// tensor loads).
layout(set = 0, binding = 0) readonly buffer BufA { MATMUL_ELEM ae[]; };
layout(set = 0, binding = 1) readonly buffer BufB { MATMUL_ELEM be[]; };
#else
layout(set = 0, binding = 0) readonly buffer BufA { uint a[]; };
layout(set = 0, binding = 1) readonly buffer BufB { uint b[]; };
#endif
layout(set = 0, binding = 2) readonly buffer BufC { uint cin[]; };
layout(set = 0, binding = 3) readonly buffer BufBias { uint bias[]; };
#if defined(TIER_PACKED)
// Not writeonly: words shared by two invocations are written with atomics.
layout(set = 0, binding = 4) buffer BufOut { uint o[]; };
#else
layout(set = 0, binding = 4) writeonly buffer BufOut { uint16_t o16[]; };
#endif
#if defined(MATMUL_WIDE_OUT)
// WIDE_OUT, where the caller knows that every column tile is whole (N a
// multiple of TN) and so every row segment of TN outputs starts on an
// 8-byte boundary, is 1 + the output's dtype code, and the epilogue stores
// 64-bit words (two fp32 or four 16-bit results) through this view of the
// output; 0 keeps the per-element stores. lavapipe stores lane by lane, a
// loop per store instruction whatever its width (the storage16 tier stored
// an fp32 result as two halves): the MNIST MLP's weight gradient, 256x784
// from K = 64, went from 1.26-1.45 to 1.05-1.15 ms in fp32 and from
// 1.11-1.28 to 1.03-1.08 in fp16 (kernel timestamps, alternated runs).
layout(constant_id = 9) const uint WIDE_OUT = 0u;
layout(set = 0, binding = 4) writeonly buffer BufOut64 { uint64_t o64[]; };
#else
const uint WIDE_OUT = 0u;
#endif

// unpack2 is unpackHalf2x16, exact for every fp16 value, but a driver's
// own: the deterministic path decodes in integer code.
vec2 unpack2(uint w) { return DETERMINISTIC ? vec2(f16_to_f32(w & 0xFFFFu), f16_to_f32(w >> 16)) : unpackHalf2x16(w); }
float half_at(uint w, uint e) { return unpack2(w >> ((e & 1u) << 4)).x; }

// bf16_at is bf16 element e of word w (its half e & 1) as an fp32: the bits
// shifted into the top half, exact, the same in integer code everywhere.
float bf16_at(uint w, uint e) { return uintBitsToFloat((e & 1u) != 0u ? w & 0xFFFF0000u : w << 16); }

// loadA1 and loadB1 read element e with one load whatever the encoding (on
// CPU drivers every load site costs compile time); loadA2 and loadB2 read
// the elements e and e+1 (e even) of an fp16 operand.
float word_value(uint w, uint e, uint mode) {
    if (mode == MODE_F32) return uintBitsToFloat(w);
    return mode == MODE_BF16 ? bf16_at(w, e) : half_at(w, e);
}

// The epilogue's dtypes (C, the bias, the output) are DT_F32, DT_F16 and
// DT_BF16; tensor.MatMul refuses others, so no integer code is compiled in.
// elem_value decodes element e of dtype dt, given the word w that holds it:
// word elem_word(e, dt).
float elem_value(uint w, uint e, uint dt) {
    return dt == DT_F32 ? uintBitsToFloat(w) : half_to_f32(w >> ((e & 1u) << 4), dt);
}
uint elem_word(uint e, uint dt) { return dt == DT_F32 ? e : e >> 1; }

// The invocation's accumulators: rows r0+i, columns c0+j of its tile.
float acc[TM][TN];

void clearAcc() {
    [[unroll]] for (uint i = 0; i < TM; i++) {
        [[unroll]] for (uint j = 0; j < TN; j++) acc[i][j] = 0.0;
    }
}

#if !defined(MATMUL_TEXELS) && !defined(MATMUL_VEC4) && !defined(MATMUL_ELEM)
float loadA1(uint e) {
    uint mode = AMODE;
    return word_value(a[mode != MODE_F32 ? e >> 1 : e], e, mode);
}
float loadB1(uint e) {
    uint mode = BMODE;
    return word_value(b[mode != MODE_F32 ? e >> 1 : e], e, mode);
}
vec2 loadA2(uint e) { return unpack2(a[e >> 1]); }
vec2 loadB2(uint e) { return unpack2(b[e >> 1]); }

// B values of one k step block for the invocation's columns, and where those
// columns start (element offsets at k = 0), for matmul_reg and matmul_sg.
float bv[KK][TN];
uint boff[TN];

// setupB points boff at columns c0.. of batch. Columns past N are clamped to
// the last one: they are computed and then dropped, which keeps the k loop
// free of bounds checks. For word pairs along n, boff[j] (j even) is the
// pair's first element.
void setupB(uint c0, uint batch) {
    uint base = batch * p.batchB;
    [[unroll]] for (uint j = 0; j < TN; j++) {
        if (!TB && BMODE == MODE_F16X2) {
            boff[j] = base + min(c0 + (j & ~1u), p.N - 2u);
        } else {
            uint c = min(c0 + j, p.N - 1u);
            boff[j] = base + (TB ? c * p.K : c);
        }
    }
}

// bElem is the element offset of B(k, c0+j).
uint bElem(uint j, uint k) {
    if (TB) return boff[j] + k;
    if (BMODE == MODE_F16X2) return boff[j & ~1u] + (j & 1u) + k * p.N;
    return boff[j] + k * p.N;
}

// loadB fills bv with B(k.., c0..), two values per load where the layout
// pairs them.
void loadB(uint k) {
    if (BMODE == MODE_F16X2 && TB) { // a word holds k+kk and k+kk+1
        [[unroll]] for (uint kk = 0; kk < KK; kk += 2) {
            [[unroll]] for (uint j = 0; j < TN; j++) {
                vec2 h = loadB2(boff[j] + k + kk);
                bv[kk][j] = h.x;
                bv[kk + 1u][j] = h.y;
            }
        }
    } else if (BMODE == MODE_F16X2) { // a word holds columns j and j+1
        [[unroll]] for (uint kk = 0; kk < KK; kk++) {
            [[unroll]] for (uint j = 0; j < TN; j += 2) {
                vec2 h = loadB2(boff[j] + (k + kk) * p.N);
                bv[kk][j] = h.x;
                bv[kk][j + 1u] = h.y;
            }
        }
    } else {
        [[unroll]] for (uint kk = 0; kk < KK; kk++) {
            [[unroll]] for (uint j = 0; j < TN; j++) bv[kk][j] = loadB1(bElem(j, k + kk));
        }
    }
    if (DETERMINISTIC) { // flushed once here rather than in every product
        [[unroll]] for (uint kk = 0; kk < KK; kk++) {
            [[unroll]] for (uint j = 0; j < TN; j++) bv[kk][j] = det_ftz(bv[kk][j]);
        }
    }
}

// fmaRow adds the products of av (one row of A over the k block) and bv to
// row i. Keeping each accumulator live across the whole k block cuts the
// stack traffic on CPU drivers, where the tile never fits in registers.
void fmaRow(uint i, float av[KK]) {
    float af[KK]; // av flushed in deterministic mode (bv is, by loadB)
    if (DETERMINISTIC) {
        [[unroll]] for (uint kk = 0; kk < KK; kk++) af[kk] = det_ftz(av[kk]);
    }
    [[unroll]] for (uint j = 0; j < TN; j++) {
        float s = acc[i][j];
        if (DETERMINISTIC) { // det_mad, k in order, its inputs flushed already
            [[unroll]] for (uint kk = 0; kk < KK; kk++) {
                precise float r = det_prod(af[kk], bv[kk][j]) + s;
                s = det_ftz(r);
            }
        } else {
            [[unroll]] for (uint kk = 0; kk < KK; kk++) s = fma(av[kk], bv[kk][j], s);
        }
        acc[i][j] = s;
    }
}

#endif // !MATMUL_TEXELS && !MATMUL_VEC4 && !MATMUL_ELEM

// finish applies alpha, beta*C and the bias biasv of the column to the
// accumulator of output element e (flat, batch included). C is not read when
// beta is 0, as in BLAS, so a NaN there does not leak into the result.
float finish(float v, uint e, float biasv) {
    if (DETERMINISTIC) {
        float r = det_mul(v, p.alpha);
        if ((EPI_FLAGS & FLAG_C) != 0u) {
            uint dt = FLAG_DT(FLAG_C_DT_SHIFT);
            r = det_mad(p.beta, elem_value(cin[elem_word(e, dt)], e, dt), r);
        }
        return det_add(r, biasv);
    }
    v *= p.alpha;
    if ((EPI_FLAGS & FLAG_C) != 0u) {
        uint dt = FLAG_DT(FLAG_C_DT_SHIFT);
        v += p.beta * elem_value(cin[elem_word(e, dt)], e, dt);
    }
    return v + biasv;
}

#if defined(TIER_PACKED)
// store_half writes fp16 bits h at element f, whose word's other half belongs
// to another invocation (or is the padding after the last element). Each
// owner clears and sets only its own half atomically, so the two writes
// commute and neither is lost.
void store_half(uint f, uint h, uint total) {
    uint w = f >> 1;
    if ((f & 1u) == 0u && f + 1u == total) {
        o[w] = h; // the high half is padding: the word is ours
        return;
    }
    uint sh = (f & 1u) << 4;
    atomicAnd(o[w], ~(0xFFFFu << sh));
    atomicOr(o[w], h << sh);
}
#endif

// storeTile writes the accumulator tile whose first output element is row
// r0, column c0 of batch `batch`, skipping what lies outside the output.
// Rows go through a loop that is not unrolled (each picks its accumulators
// with selects): unrolled, the epilogue would be TM times larger, and CPU
// drivers spend seconds compiling it.
//
// Each row segment is contiguous in memory. In the packed tier a 16-bit row
// segment may start or end mid-word (odd N, odd column, or a batch of odd
// size): whole words inside it are plain stores, the halves at its ends go
// through store_half.
void storeTile(uint r0, uint c0, uint batch) {
    if (r0 >= p.M || c0 >= p.N) return;
    uint cnt = min(TN, p.N - c0);
    uint rows = min(TM, p.M - r0);
    // A wide epilogue's dtype is a constant: no branch on it is compiled.
    uint odt = WIDE_OUT != 0u ? WIDE_OUT - 1u : FLAG_DT(FLAG_OUT_DT_SHIFT);
    bool half_ = odt != DT_F32;
    float bsv[TN];
    [[unroll]] for (uint j = 0; j < TN; j++) {
        uint c = c0 + min(j, cnt - 1u); // keep reads in bounds
        bsv[j] = 0.0;
        if ((EPI_FLAGS & FLAG_BIAS) != 0u) {
            uint bdt = FLAG_DT(FLAG_BIAS_DT_SHIFT);
            bsv[j] = elem_value(bias[elem_word(c, bdt)], c, bdt);
        }
    }
#if defined(TIER_PACKED)
    uint total = p.batches * p.M * p.N;
#endif
    [[dont_unroll]] for (uint i = 0; i < rows; i++) {
        float v[TN];
        [[unroll]] for (uint j = 0; j < TN; j++) v[j] = acc[0][j];
        [[unroll]] for (uint ii = 1; ii < TM; ii++) {
            [[unroll]] for (uint j = 0; j < TN; j++) v[j] = i == ii ? acc[ii][j] : v[j];
        }
        uint f0 = (batch * p.M + r0 + i) * p.N + c0;
        [[unroll]] for (uint j = 0; j < TN; j++) v[j] = finish(v[j], f0 + min(j, cnt - 1u), bsv[j]);
        // The results' bits in the output dtype: one branch per row on the
        // (uniform) dtype, not a select per element.
        uint w[TN];
        if (odt == DT_BF16) {
            [[unroll]] for (uint j = 0; j < TN; j++) w[j] = f32_to_bf16(v[j]);
        } else if (half_) {
            [[unroll]] for (uint j = 0; j < TN; j++) w[j] = f32_to_f16(v[j]);
        } else {
            [[unroll]] for (uint j = 0; j < TN; j++) w[j] = floatBitsToUint(v[j]);
        }
#if defined(MATMUL_WIDE_OUT)
        if (WIDE_OUT != 0u) { // f0 is a multiple of 8
            if (half_) {
                [[unroll]] for (uint j = 0; j < TN; j += 4)
                    o64[(f0 + j) >> 2] = packUint2x32(uvec2(w[j] | (w[j + 1u] << 16), w[j + 2u] | (w[j + 3u] << 16)));
            } else {
                [[unroll]] for (uint j = 0; j < TN; j += 2) o64[(f0 + j) >> 1] = packUint2x32(uvec2(w[j], w[j + 1u]));
            }
            continue;
        }
#endif
#if defined(TIER_PACKED)
        if (!half_) {
            [[unroll]] for (uint j = 0; j < TN; j++) {
                if (j < cnt) o[f0 + j] = w[j];
            }
        } else if ((f0 & 1u) == 0u) {
            [[unroll]] for (uint j = 0; j < TN; j += 2) {
                if (j + 1u < cnt) {
                    o[(f0 + j) >> 1] = w[j] | (w[j + 1u] << 16);
                } else if (j < cnt) {
                    store_half(f0 + j, w[j], total);
                }
            }
        } else {
            store_half(f0, w[0], total);
            [[unroll]] for (uint j = 1; j < TN; j += 2) {
                if (j + 1u < cnt) {
                    o[(f0 + j) >> 1] = w[j] | (w[j + 1u] << 16);
                } else if (j < cnt) {
                    store_half(f0 + j, w[j], total);
                }
            }
        }
#else
        [[unroll]] for (uint j = 0; j < TN; j++) {
            if (j < cnt) {
                // 16-bit: one half; 32-bit: the low half, then the high one.
                uint f = f0 + j;
                o16[half_ ? f : 2u * f] = uint16_t(w[j] & 0xFFFFu);
                if (!half_) o16[2u * f + 1u] = uint16_t(w[j] >> 16);
            }
        }
#endif
    }
}

#endif
