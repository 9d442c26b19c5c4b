// Shared by the convolution kernels.
#ifndef VKAMP_CONV_GLSL
#define VKAMP_CONV_GLSL

#include "ewise.glsl"

// DEFINE_STORE_AT(NAME, BUF, DT) defines NAME_at_pair(at, n, v), storing
// elements at and at+1 (the second only when at+1 < n). A 32-bit dtype takes
// any at; a 16-bit one needs an even at, so that the word has one writer.
#define DEFINE_STORE_AT(NAME, BUF, DT)                                        \
    void NAME##_at_pair(uint at, uint n, vec2 v) {                            \
        if (!dt_wide(DT)) {                                                   \
            uint hi = at + 1u < n ? f32_to_half(v.y, DT) : 0u;                \
            BUF[at >> 1] = f32_to_half(v.x, DT) | (hi << 16);                 \
            return;                                                           \
        }                                                                     \
        BUF[at] = f32_to_word(v.x, DT);                                       \
        if (at + 1u < n) BUF[at + 1u] = f32_to_word(v.y, DT);                 \
    }

// DEFINE_BITS(NAME, BUF, DT) defines NAME_bits(i), the bits of element i
// (a 16-bit element in the low half), and NAME_bits_pair(at, n, b), storing
// the bits of elements at and at+1 (the second only when at+1 < n; at even
// for a 16-bit dtype): copies of one dtype skip the conversions, which are
// integer code for 16-bit types.
#define DEFINE_BITS(NAME, BUF, DT)                                            \
    uint NAME##_bits(uint i) {                                                \
        if (!dt_wide(DT)) return (BUF[i >> 1] >> ((i & 1u) * 16u)) & 0xFFFFu;  \
        return BUF[i];                                                        \
    }
#define DEFINE_STORE_BITS(NAME, BUF, DT)                                      \
    void NAME##_bits_pair(uint at, uint n, uvec2 b) {                         \
        if (!dt_wide(DT)) {                                                   \
            BUF[at >> 1] = b.x | (at + 1u < n ? b.y << 16 : 0u);              \
            return;                                                           \
        }                                                                     \
        BUF[at] = b.x;                                                        \
        if (at + 1u < n) BUF[at + 1u] = b.y;                                  \
    }

// bits_to_f32 decodes the bits of an element of dtype dt.
float bits_to_f32(uint b, uint dt) { return dt_wide(dt) ? word_to_f32(b, dt) : half_to_f32(b, dt); }

// RUN is the number of consecutive elements one invocation makes: the
// divisions that place its first element (slow on CPU drivers, which run
// integer division lane by lane) are shared by the run, and the others step
// indices. Even, so that 16-bit words stay whole.
#define RUN 8u

#endif
