// Order keys: a float's bits as an unsigned integer that orders as the
// values do, for kernels that compare values exactly on every driver
// (SwiftShader compares subnormals as zero): argmax, argmin, topk.
#ifndef VKAMP_ORDER_KEY_GLSL
#define VKAMP_ORDER_KEY_GLSL

#include "dtype.glsl"

#define KEY_NAN 0xFFFFFFFFu

// DEFINE_ORDER_KEY(NAME, BUF, DT) defines NAME_key(i): element i of BUF,
// of dtype DT, as its key: larger for larger values, -0 and +0 one key,
// NaN KEY_NAN (above every number), and no number 0 or KEY_NAN (the keys
// run from 0x007FFFFF, -inf, to 0xFF800000, +inf). A 16-bit value is
// placed at the top of the word: the same order. Branches, not
// ternaries, keep every word read within the buffer.
#define DEFINE_ORDER_KEY(NAME, BUF, DT)                                              \
    uint NAME##_key(uint i) {                                                        \
        uint b, inf;                                                                 \
        if (dt_wide(DT)) {                                                           \
            b = BUF[i];                                                              \
            inf = 0x7F800000u;                                                       \
        } else {                                                                     \
            b = ((BUF[i >> 1] >> ((i & 1u) * 16u)) & 0xFFFFu) << 16;                 \
            inf = half_inf(DT) << 16;                                                \
        }                                                                            \
        uint mag = b & 0x7FFFFFFFu;                                                  \
        if (mag > inf) return KEY_NAN;                                               \
        /* negatives reversed below 2^31, positives above, both zeros at 2^31 */    \
        return mag == 0u ? 0x80000000u : ((b >> 31) != 0u ? ~b : b | 0x80000000u); \
    }

#endif
