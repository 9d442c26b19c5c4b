// Shared part of the texel attention kernels (attention_tex_fwd,
// attention_tex_dq, attention_tex_dkv), the CPU drivers' variant of the
// fused kernels in attention.glsl, with the same layouts and math: qkv
// [batch*T, 3C] (q | k | v, head h in columns h*HD..(h+1)*HD of each part),
// y and dy [batch*T, C], all of dtype QKV_DT; lse and D Float32 [batch*heads,
// T].
//
// lavapipe loads storage and shared memory lane by lane (about 20 cycles a
// 32-bit value) but fetches texels with SIMD gathers, and keeps an array in
// registers only when every index is a constant. So rows are read as uniform
// texel buffers (8 fp16 or 4 fp32 elements a fetch), the head size HD is a
// specialization constant that every loop over a row unrolls, and nothing
// is staged: each invocation owns one row and fetches the other side's rows
// itself (the same texel in all lanes costs no more than one per lane).
// HD must be a multiple of EPT, the elements of a texel.
#ifndef VKAMP_ATTENTION_TEX_GLSL
#define VKAMP_ATTENTION_TEX_GLSL

#extension GL_EXT_control_flow_attributes : require

#include "common.glsl"
#include "dtype.glsl"

layout(constant_id = 1) const uint QKV_DT = DT_F32;
layout(constant_id = 2) const uint HD = 32; // head size

#define EPT (QKV_DT == DT_F32 ? 4u : 8u)
#define NT (HD / EPT)

layout(push_constant) uniform AttentionPush {
    uint T;     // sequence length
    uint heads; // heads; C = heads * hd
    uint hd;    // head size (HD)
    uint bh;    // batch * heads
    float scale;
} p;

// tx is element i (a constant) of a fetched texel.
float tx(uvec4 x, uint i) {
    if (QKV_DT == DT_F32) return uintBitsToFloat(x[i]);
    uint h = x[i >> 1] >> ((i & 1u) << 4);
    return QKV_DT == DT_F16 ? unpackHalf2x16(h).x : bf16_to_f32(h);
}

// LOAD_ROW sets r[0..HD) to the head slice at element e of tex.
#define LOAD_ROW(tex, e, r)                                                   \
    [[unroll]] for (uint t_ = 0u; t_ < NT; t_++) {                            \
        uvec4 x_ = texelFetch(tex, int((e) / EPT + t_));                      \
        [[unroll]] for (uint i_ = 0u; i_ < EPT; i_++) r[t_ * EPT + i_] = tx(x_, i_); \
    }

// DOT_ROW adds a . (the head slice at element e of tex) to s.
#define DOT_ROW(tex, e, a, s)                                                 \
    [[unroll]] for (uint t_ = 0u; t_ < NT; t_++) {                            \
        uvec4 x_ = texelFetch(tex, int((e) / EPT + t_));                      \
        [[unroll]] for (uint i_ = 0u; i_ < EPT; i_++) s = fma(a[t_ * EPT + i_], tx(x_, i_), s); \
    }

// AXPY_ROW adds f * (the head slice at element e of tex) to r.
#define AXPY_ROW(tex, e, f, r)                                                \
    [[unroll]] for (uint t_ = 0u; t_ < NT; t_++) {                            \
        uvec4 x_ = texelFetch(tex, int((e) / EPT + t_));                      \
        [[unroll]] for (uint i_ = 0u; i_ < EPT; i_++) r[t_ * EPT + i_] = fma(f, tx(x_, i_), r[t_ * EPT + i_]); \
    }

// ST_ROW stores r[0..HD) at element e of buf, a buffer of 32-bit words.
#define ST_ROW(buf, e, r)                                                     \
    if (QKV_DT == DT_F32) {                                                   \
        [[unroll]] for (uint d_ = 0u; d_ < HD; d_++) buf[(e) + d_] = floatBitsToUint(r[d_]); \
    } else {                                                                  \
        [[unroll]] for (uint d_ = 0u; d_ < HD; d_ += 2u)                      \
            buf[((e) + d_) >> 1] = f32_to_half(r[d_], QKV_DT) | (f32_to_half(r[d_ + 1u], QKV_DT) << 16); \
    }

// fetchF32 is element i of a Float32 texel buffer.
float fetchF32(usamplerBuffer tex, uint i) { return uintBitsToFloat(texelFetch(tex, int(i >> 2))[i & 3u]); }

// A running maximum starts at NEG_BIG, not -inf: exp(NEG_BIG - m) is 0
// without an inf - inf (exp of -inf differs between drivers).
#define NEG_BIG -3.0e38

#endif
