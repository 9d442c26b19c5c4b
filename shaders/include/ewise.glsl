// Shared code for elementwise kernels and reductions over word-declared
// buffers (see dtype.glsl). A kernel's dtypes are specialization constants
// holding dtype codes, folded by the driver; each kernel declares those it
// reads, by convention constant 1 (IN0_DT) and 2 (IN1_DT) for inputs and 3
// (OUT_DT) for the output.
#ifndef VKAMP_EWISE_GLSL
#define VKAMP_EWISE_GLSL

#include "common.glsl"
#include "dtype.glsl"

// nan_max is max that propagates NaN, as IEEE maximum does; GLSL max may not.
float nan_max(float a, float b) {
    if (is_nan(a)) return a;
    if (is_nan(b)) return b;
    return b > a ? b : a;
}

// DEFINE_LOADS(NAME, BUF, DT) defines NAME_at(i), element i as fp32, and
// NAME_pair(w, n), elements 2w and 2w+1 (0 past n). Branches, not ternaries,
// keep every word read within the buffer. 16-bit elements go through the
// branchless conversions (fp16.glsl's _flat forms, the same bits), here and
// in DEFINE_STORE: SwiftShader runs every side of a branch, and its
// stream/add-f16 went from 0.34-0.35 to 0.50-0.51 GB/s, dropout-f16 from
// 0.15 to 0.21-0.22 (4M elements, tools/bench, alternated).
#define DEFINE_LOADS(NAME, BUF, DT)                                           \
    float NAME##_at(uint i) {                                                 \
        if (!dt_wide(DT)) return half_to_f32_flat((BUF[i >> 1] >> ((i & 1u) * 16u)) & 0xFFFFu, DT); \
        return word_to_f32(BUF[i], DT);                                       \
    }                                                                         \
    vec2 NAME##_pair(uint w, uint n) {                                        \
        if (!dt_wide(DT)) {                                                   \
            uint x = BUF[w];                                                  \
            return vec2(half_to_f32_flat(x & 0xFFFFu, DT), half_to_f32_flat(x >> 16, DT)); \
        }                                                                     \
        vec2 v = vec2(word_to_f32(BUF[2u * w], DT), 0.0);                     \
        if (2u * w + 1u < n) v.y = word_to_f32(BUF[2u * w + 1u], DT);         \
        return v;                                                             \
    }

// DEFINE_STORE(NAME, BUF, DT) defines NAME_pair(w, n, v), storing elements
// 2w and 2w+1. A 16-bit word is written whole by one invocation, so there
// are no races; the padding half past an odd n is zeroed.
#define DEFINE_STORE(NAME, BUF, DT)                                           \
    void NAME##_pair(uint w, uint n, vec2 v) {                                \
        if (!dt_wide(DT)) {                                                   \
            uint hi = 2u * w + 1u < n ? f32_to_half_flat(v.y, DT) : 0u;       \
            BUF[w] = f32_to_half_flat(v.x, DT) | (hi << 16);                  \
            return;                                                           \
        }                                                                     \
        BUF[2u * w] = f32_to_word(v.x, DT);                                   \
        if (2u * w + 1u < n) BUF[2u * w + 1u] = f32_to_word(v.y, DT);         \
    }

// F32_QUADS(N, Q) loops Q over the whole vec4s of N fp32 elements (a
// grid-stride loop) and F32_TAIL(N, I), in invocation 0, I over the last
// N % 4 elements: the fp32 path of the elementwise kernels' storage-buffer
// forms (binary.glsl says why), whose grid is then one invocation per four
// elements (tensor's ewiseGrid).
#define F32_QUADS(N, Q) GRID_STRIDE(Q, (N) / 4u)
#define F32_TAIL(N, I)                                                        \
    if (gl_GlobalInvocationID.x == 0u)                                        \
        for (uint I = (N) & ~3u; I < (N); I++)

#endif
