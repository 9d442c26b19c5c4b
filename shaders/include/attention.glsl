// Shared part of the causal self-attention kernels (attention_fwd,
// attention_bwd_dq, attention_bwd_dkv). qkv is [batch*T, 3C]: q | k | v
// along each row, head h in columns h*hd..(h+1)*hd of each part (nanoGPT's
// c_attn output); y and dy are [batch*T, C] with heads merged. All of them
// have dtype QKV_DT, read and written as 32-bit words (a 16-bit element is
// half of word e>>1, low half first); 16-bit dtypes need an even hd, so a
// head's slice of a row is whole words and every word has one writer. Math
// is fp32, on vec4s of the head axis (zero past hd), hd at most 4*HD4_MAX.
// Rows of lse and D that a block needs are staged in shared memory too.
//
// Each invocation owns one row (a query row, or a key row for dk and dv) of
// one (batch, head); a workgroup covers consecutive rows of one (batch,
// head) and stages the other side's rows through shared memory in blocks of
// BK rows, so each staged element is read once per workgroup. The head
// size is a push constant, so that no loop over the head is unrolled
// (lavapipe took minutes to compile the kernels with a constant head size).
#ifndef VKAMP_ATTENTION_GLSL
#define VKAMP_ATTENTION_GLSL

#extension GL_EXT_control_flow_attributes : require

#include "common.glsl"
#include "dtype.glsl"
#include "det_extra.glsl"

layout(constant_id = 1) const uint QKV_DT = DT_F32;
// HD4_MAX is the capacity of the per-row arrays and staged rows, in vec4s:
// the runtime passes the head size's vec4 count rounded up to a power of
// two. Arrays sized to the head, not to the largest head, keep a CPU
// driver's per-invocation scratch in cache (lavapipe's dk/dv kernel ran
// six times slower with room for 128).
layout(constant_id = 2) const uint HD4_MAX = 32;

#define BK 16u

layout(push_constant) uniform AttentionPush {
    uint T;     // sequence length
    uint heads; // heads; C = heads * hd
    uint hd;    // head size
    uint bh;    // batch * heads
    float scale;
} p;

// LD is element e of a QKV_DT buffer of words.
#define LD(buf, e) (QKV_DT == DT_F32 ? uintBitsToFloat(buf[e]) : half_to_f32(buf[(e) >> 1] >> (((e) & 1u) << 4), QKV_DT))

// DEFINE_LD4 defines fn(base, d0): elements d0..d0+3 of the head slice at
// element base of buf, zero past hd.
#define DEFINE_LD4(fn, buf)                                          \
    vec4 fn(uint base, uint d0) {                                    \
        vec4 r = vec4(0.0);                                          \
        [[unroll]] for (uint c = 0u; c < 4u; c++) {                  \
            if (d0 + c < p.hd) r[c] = LD(buf, base + d0 + c);        \
        }                                                            \
        return r;                                                    \
    }

// ST stores v[0..hd) (vec4s) at element e of buf (even for 16-bit dtypes).
#define ST(buf, e, v)                                                                          \
    if (QKV_DT == DT_F32) {                                                                    \
        for (uint d_ = 0u; d_ < p.hd; d_++) buf[(e) + d_] = floatBitsToUint(v[d_ >> 2][d_ & 3u]); \
    } else {                                                                                   \
        for (uint d_ = 0u; d_ < p.hd; d_ += 2u)                                                \
            buf[((e) + d_) >> 1] = f32_to_half(v[d_ >> 2][d_ & 3u], QKV_DT) |                  \
                                   (f32_to_half(v[d_ >> 2][(d_ & 3u) + 1u], QKV_DT) << 16);      \
    }

// In deterministic mode (det_extra.glsl) every sum, product, exp and log
// takes det.glsl's arithmetic; each output's order is already fixed (keys
// in order, the head's components in order), whatever the device.

// A running maximum starts at NEG_BIG, not -inf: exp(NEG_BIG - m) is 0
// without an inf - inf (exp of -inf differs between drivers).
#define NEG_BIG -3.0e38

#endif
