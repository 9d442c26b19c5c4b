// Texel forms of the row kernels (rows.glsl, softmax.glsl,
// softmax_back.glsl) for CPU drivers: one invocation per row, the row read
// as uniform texels (texels.glsl: lavapipe gathers texels in SIMD, where it
// loads storage buffers lane by lane) in ascending order, as the row
// kernels' segment of one invocation reads it, so their results are the
// same bits. A row need not start on a block: its elements before the
// first whole block of 8 and after the last are fetched one by one (a
// texel and a component), the whole blocks two texels at a time (one for
// 16-bit elements). Outputs of whole blocks are stored as 64-bit words.
// Not on the deterministic path, whose row kernels stay the tree ones.
// DEFINE_TEX_ELEM also serves kernels that read scattered elements as
// texels (pool2d_backward's texel form).
#ifndef VKAMP_ROWS_TEX_GLSL
#define VKAMP_ROWS_TEX_GLSL

#include "texels.glsl"

// DEFINE_TEX_ELEM(NAME, TEX, DT) defines NAME_elem(i): element i of TEX as
// fp32.
#define DEFINE_TEX_ELEM(NAME, TEX, DT)                                        \
    float NAME##_elem(uint i) {                                               \
        if (dt_wide(DT)) return word_to_f32(texelFetch(TEX, int(i >> 2))[i & 3u], DT); \
        uint w = texelFetch(TEX, int(i >> 3))[(i >> 1) & 3u];                 \
        return half_to_f32_flat((w >> ((i & 1u) * 16u)) & 0xFFFFu, DT);       \
    }

// ROW_SPAN(LO, HI) declares the split of elements [LO, HI) into a head
// [LO, hm_), whole blocks [q0_, q1_) and a tail [ts_, HI).
#define ROW_SPAN(LO, HI)                                                      \
    uint q0_ = ((LO) + 7u) / 8u, q1_ = (HI) / 8u;                             \
    uint hm_ = min(8u * q0_, (HI)), ts_ = max(8u * q1_, hm_);

// FOR_ROW(X, LO, HI, V, BODY) runs BODY with float V each element of X
// (DEFINE_TEX_LOADS and DEFINE_TEX_ELEM's NAME) in [LO, HI), in order.
#define FOR_ROW(X, LO, HI, V, BODY)                                           \
    {                                                                         \
        ROW_SPAN(LO, HI)                                                      \
        for (uint i_ = (LO); i_ < hm_; i_++) { float V = X##_elem(i_); BODY; } \
        for (uint q_ = q0_; q_ < q1_; q_++) {                                 \
            vec4 a_, b_;                                                      \
            X##_oct(q_, 0u, true, a_, b_);                                    \
            { float V = a_.x; BODY; } { float V = a_.y; BODY; }               \
            { float V = a_.z; BODY; } { float V = a_.w; BODY; }               \
            { float V = b_.x; BODY; } { float V = b_.y; BODY; }               \
            { float V = b_.z; BODY; } { float V = b_.w; BODY; }               \
        }                                                                     \
        for (uint i_ = ts_; i_ < (HI); i_++) { float V = X##_elem(i_); BODY; } \
    }

// FOR_ROW2 is FOR_ROW over two inputs at once: V from X, W from Z.
#define FOR_ROW2(X, Z, LO, HI, V, W, BODY)                                    \
    {                                                                         \
        ROW_SPAN(LO, HI)                                                      \
        for (uint i_ = (LO); i_ < hm_; i_++) { float V = X##_elem(i_), W = Z##_elem(i_); BODY; } \
        for (uint q_ = q0_; q_ < q1_; q_++) {                                 \
            vec4 a_, b_, c_, d_;                                              \
            X##_oct(q_, 0u, true, a_, b_);                                    \
            Z##_oct(q_, 0u, true, c_, d_);                                    \
            { float V = a_.x, W = c_.x; BODY; } { float V = a_.y, W = c_.y; BODY; } \
            { float V = a_.z, W = c_.z; BODY; } { float V = a_.w, W = c_.w; BODY; } \
            { float V = b_.x, W = d_.x; BODY; } { float V = b_.y, W = d_.y; BODY; } \
            { float V = b_.z, W = d_.z; BODY; } { float V = b_.w, W = d_.w; BODY; } \
        }                                                                     \
        for (uint i_ = ts_; i_ < (HI); i_++) { float V = X##_elem(i_), W = Z##_elem(i_); BODY; } \
    }

#endif
