// Texel forms of the elementwise kernels, for CPU drivers: lavapipe loads a
// storage buffer lane by lane (a branch and a bounds check per word) but
// fetches a uvec4 texel with one SIMD gather, so the inputs are uniform
// texel buffers and each invocation makes a block of 8 consecutive elements
// (one texel of 16-bit values, two of 32-bit ones). Stores stay lane by
// lane, at a cost per scalar store and per store instruction: whole blocks
// are stored as 64-bit words (a u64vec2 of 16-bit elements, a u64vec4 of
// 32-bit ones), half the stores of uvec4s. On lavapipe the copy kernel (now
// the driver's buffer copy) moved about 2.5x, and the casts (with the
// select-only conversions below) 1.5-1.9x, as many bytes per CPU second;
// the device needs shaderInt64.
// The last, partial block is stored word by word through a uint view of
// the same binding (TAIL), so that nothing past the output's size is
// written; each 16-bit word still has one writer and the padding half past
// an odd n is zeroed, as in ewise.glsl. lavapipe runs both sides of a
// branch whatever the lanes take, so the full blocks take a path without
// the tail's code (full is a constant where the calls are inlined), the
// tail is done once after the loop, and the grid is kept small (tensor's
// texGroups) so that each invocation loops over many blocks, each subgroup
// over one span of consecutive blocks (common.glsl's SPAN_STRIDE).
#ifndef VKAMP_TEXELS_GLSL
#define VKAMP_TEXELS_GLSL

#include "ewise.glsl"

// DRIVER_HALVES (id 30) decodes fp16 with the driver's unpackHalf2x16
// (on lavapipe with F16C, one vcvtph2ps for 8 lanes) in place of vkamp's
// integer decode: set by the device where a probe found the driver's decode
// of every half, through a texel form's SIMD lanes, the integer decode's
// bits (tensor/internal/kernels.driverHalves), and not in deterministic
// mode. Only kernels that define DRIVER_HALVES_OK take it: those that add,
// multiply or convert what they decode. LLVM narrows a comparison of a
// decoded value to an fp16 one, which x86 without AVX512-FP16 makes lane by
// lane: ReLU took 3.1x as long, GELU 1.7x. On lavapipe (an AMD EPYC,
// tools/bench, alternated) stream/cast-f16-f32 went from 0.63-0.68x of
// copy/buffer to 0.76-0.82x, add-f16 0.38-0.40x to 0.56-0.61x, dropout-f16
// 0.29-0.31x to 0.36-0.39x, sum-cols-f16 0.18-0.20x to 0.24-0.26x.
layout(constant_id = 30) const bool DRIVER_HALVES = false;

// unpack_half2 decodes the two 16-bit elements of word w.
vec2 unpack_half2(uint w, uint dt) {
#if defined(DRIVER_HALVES_OK)
    if (DRIVER_HALVES && dt == DT_F16) return unpackHalf2x16(w);
#endif
    return vec2(half_to_f32_flat(w & 0xFFFFu, dt), half_to_f32_flat(w >> 16, dt));
}

// OCT_DECODE(T0, T1, DT, LO, HI) decodes a block of 8 elements of dtype DT
// as fp32 from its texels: one of 16-bit elements (T1 unused) or two of
// 32-bit ones. A macro: as a function it made every texel form's SPIR-V
// 12 KiB larger.
#define OCT_DECODE(T0, T1, DT, LO, HI)                                        \
    if (!dt_wide(DT)) {                                                       \
        LO = vec4(unpack_half2(T0.x, DT), unpack_half2(T0.y, DT));            \
        HI = vec4(unpack_half2(T0.z, DT), unpack_half2(T0.w, DT));            \
    } else {                                                                  \
        LO = vec4(word_to_f32(T0.x, DT), word_to_f32(T0.y, DT), word_to_f32(T0.z, DT), word_to_f32(T0.w, DT)); \
        HI = vec4(word_to_f32(T1.x, DT), word_to_f32(T1.y, DT), word_to_f32(T1.z, DT), word_to_f32(T1.w, DT)); \
    }

// DEFINE_TEX_LOADS(NAME, TEX, DT) defines NAME_oct(q, n, full, lo, hi):
// elements 8q..8q+7 of TEX as fp32 (full: all below n). A texel that
// starts past n is not fetched: the texel view ends with the buffer's last
// whole texel.
#define DEFINE_TEX_LOADS(NAME, TEX, DT)                                       \
    void NAME##_oct(uint q, uint n, bool full, out vec4 lo, out vec4 hi) {    \
        uvec4 x_ = texelFetch(TEX, int(dt_wide(DT) ? 2u * q : q)), y_ = uvec4(0u); \
        if (dt_wide(DT) && (full || 8u * q + 4u < n)) y_ = texelFetch(TEX, int(2u * q + 1u)); \
        OCT_DECODE(x_, y_, DT, lo, hi)                                        \
    }

// f32_to_half_cpu encodes f as a 16-bit element of dtype dt, rounding as
// f32_to_half_flat does: the texel forms run on CPU drivers alone.
uint f32_to_half_cpu(float f, uint dt) { return dt == DT_BF16 ? f32_to_bf16(f) : f32_to_f16_cpu(f); }

// pack_half2 encodes a and b as the two 16-bit elements of a word.
uint pack_half2(float a, float b, uint dt) { return f32_to_half_cpu(a, dt) | (f32_to_half_cpu(b, dt) << 16); }

// DEFINE_TEX_OUTPUT(BINDING, BLOCK, NAME, DT) declares output binding
// BINDING three ways, as NAME (an array of u64vec2, a texel's 16 bytes),
// NAME##4 (u64vec4, a block of 32-bit elements) and NAME##_words (uint, for
// partial blocks), with blocks BLOCK, BLOCK##4 and BLOCK##Words, and defines
// NAME_oct(q, n, full, lo, hi) storing elements 8q..8q+7 (those below n) of
// dtype DT through them, and NAME_halves(q, n, full, w) storing them as
// the 16-bit elements already packed in w (a table's results: lut16.comp). A whole block of 32-bit elements is one u64vec4
// store, not two u64vec2s: lavapipe loops over the lanes once per store
// (tools/bench stream/cast-f16-f32, lavapipe, alternated runs: 0.44-0.51 ->
// 0.50-0.52x copy/buffer).
#define DEFINE_TEX_OUTPUT(BINDING, BLOCK, NAME, DT)                           \
    layout(set = 0, binding = BINDING) writeonly buffer BLOCK { u64vec2 NAME[]; }; \
    layout(set = 0, binding = BINDING) writeonly buffer BLOCK##4 { u64vec4 NAME##4[]; }; \
    layout(set = 0, binding = BINDING) writeonly buffer BLOCK##Words { uint NAME##_words[]; }; \
    void NAME##_halves(uint q, uint n, bool full, uvec4 w) {                 \
        if (full) { NAME[q] = wide2(w); return; }                              \
        for (uint j = 0u; j < 4u && 8u * q + 2u * j < n; j++)                 \
            NAME##_words[4u * q + j] = 8u * q + 2u * j + 1u < n ? w[j] : w[j] & 0xFFFFu; \
    }                                                                         \
    void NAME##_oct(uint q, uint n, bool full, vec4 lo, vec4 hi) {           \
        if (!dt_wide(DT)) {                                                   \
            NAME##_halves(q, n, full, uvec4(pack_half2(lo.x, lo.y, DT), pack_half2(lo.z, lo.w, DT), \
                                            pack_half2(hi.x, hi.y, DT), pack_half2(hi.z, hi.w, DT))); \
            return;                                                           \
        }                                                                     \
        uvec4 x_ = uvec4(f32_to_word(lo.x, DT), f32_to_word(lo.y, DT), f32_to_word(lo.z, DT), f32_to_word(lo.w, DT)); \
        uvec4 y_ = uvec4(f32_to_word(hi.x, DT), f32_to_word(hi.y, DT), f32_to_word(hi.z, DT), f32_to_word(hi.w, DT)); \
        if (full) { NAME##4[q] = u64vec4(wide2(x_), wide2(y_)); return; }           \
        for (uint j = 0u; j < 4u && 8u * q + j < n; j++) NAME##_words[8u * q + j] = x_[j]; \
        for (uint j = 0u; j < 4u && 8u * q + 4u + j < n; j++) NAME##_words[8u * q + 4u + j] = y_[j]; \
    }

// TEX_MAIN(BLOCK) is the main of a texel form: BLOCK(q, full) makes block
// q, every full block in the grid-stride loop, then the partial one.
#define TEX_MAIN(BLOCK)                                                       \
    void main() {                                                             \
        uint full = p.n / 8u;                                                 \
        SPAN_STRIDE(q, full) BLOCK(q, true);                                  \
        if (gl_GlobalInvocationID.x == 0u && 8u * full < p.n) BLOCK(full, false); \
    }

#endif
