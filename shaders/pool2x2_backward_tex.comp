#version 450
// pool2x2_backward_tex is pool2d_backward's texel form for the windows of
// pool2x2_tex (kernel 2, stride 2, no padding, planes of even height, rows
// whose width W is a multiple of 8). Those windows tile the input, so every
// input pixel is in exactly one: each invocation takes four consecutive
// upstream gradients of a row (and for max pooling their argmaxes), one
// texel fetch each, and stores the two blocks of 8 input pixels under them
// (twice over, from one texel of upstream gradients, in MAX_BITS16's loop),
// pool2d_backward's arithmetic in its order: the same bits.
// Its push constants are the forward's: n counts the upstream gradients,
// and div_by's numbers are for Wo and Ho.
#define TEXELS
#include "texels.glsl"
#include "pool.glsl"
#include "det_extra.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(set = 0, binding = 0) uniform usamplerBuffer dy;
layout(set = 0, binding = 1) uniform usamplerBuffer idx;

DEFINE_TEX_OUTPUT(2, D, d, OUT_DT)

// dy4 returns upstream gradients 4j..4j+3.
vec4 dy4(uint j) {
    if (dt_wide(IN0_DT)) {
        uvec4 w = texelFetch(dy, int(j));
        return vec4(word_to_f32(w.x, IN0_DT), word_to_f32(w.y, IN0_DT), word_to_f32(w.z, IN0_DT), word_to_f32(w.w, IN0_DT));
    }
    uvec4 w = texelFetch(dy, int(j / 2u));
    uvec2 h = (j & 1u) == 0u ? w.xy : w.zw;
    return vec4(unpack_half2(h.x, IN0_DT), unpack_half2(h.y, IN0_DT));
}

// grads returns the gradients of a window's four pixels (top pair, bottom
// pair) from its upstream gradient g and argmax at; q is the plane index of
// its top-left pixel.
void grads(float g, uint at, uint q, uint w, out vec2 top, out vec2 bottom) {
    if (MODE == POOL_MAX) {
        float s = xadd(0.0, g);
        top = vec2(at == q ? s : 0.0, at == q + 1u ? s : 0.0);
        bottom = vec2(at == q + w ? s : 0.0, at == q + w + 1u ? s : 0.0);
        return;
    }
    float s = xadd(0.0, xdiv(g, 4.0));
    top = vec2(s);
    bottom = vec2(s);
}

// MAX_BITS16 (pool.glsl): each input pixel's gradient is 0 or its window's
// 0 + g converted to fp32 and back: g, a NaN made quiet. (Mesa's compiler
// folds 0 + g to g, so -0 stays -0, as in pool2d_backward on lavapipe,
// where this form runs.) So grads16 moves bits and converts nothing.

// sum16 is the bits of 0 + g for the bits g of a 16-bit float of IN0_DT.
uint sum16(uint g) { return (g & 0x7FFFu) > half_inf(IN0_DT) ? g | half_quiet(IN0_DT) : g; }

// pick16 is the bits of a window's pixel gradients, top pair then bottom
// pair as two words, from its gradient's bits g and argmax at.
uvec2 pick16(uint g, uint at, uint q, uint w) {
    uint s = sum16(g);
    return uvec2((at == q ? s : 0u) | ((at == q + 1u ? s : 0u) << 16), (at == q + w ? s : 0u) | ((at == q + w + 1u ? s : 0u) << 16));
}

// grads16 stores the input gradients under upstream gradients 4j..4j+3,
// whose bits are h, for MAX_BITS16; t and q are the top-left input's
// (tile2x2), t a multiple of 8.
void grads16(uint j, uvec2 h, uint t, uint q) {
    uvec4 at = texelFetch(idx, int(j));
    uvec2 g0 = pick16(h.x & 0xFFFFu, at.x, q, tl.w), g1 = pick16(h.x >> 16, at.y, q + 2u, tl.w);
    uvec2 g2 = pick16(h.y & 0xFFFFu, at.z, q + 4u, tl.w), g3 = pick16(h.y >> 16, at.w, q + 6u, tl.w);
    d[t / 8u] = wide2(uvec4(g0.x, g1.x, g2.x, g3.x));
    d[(t + tl.w) / 8u] = wide2(uvec4(g0.y, g1.y, g2.y, g3.y));
}

// grads4 is grads16 through fp32.
void grads4(uint j, uint t, uint q) {
    vec4 g = dy4(j);
    uvec4 at = MODE == POOL_MAX ? texelFetch(idx, int(j)) : uvec4(0u);
    vec2 t0, t1, t2, t3, b0, b1, b2, b3;
    grads(g.x, at.x, q, tl.w, t0, b0);
    grads(g.y, at.y, q + 2u, tl.w, t1, b1);
    grads(g.z, at.z, q + 4u, tl.w, t2, b2);
    grads(g.w, at.w, q + 6u, tl.w, t3, b3);
    d_oct(t / 8u, 0u, true, vec4(t0, t1), vec4(t2, t3));
    d_oct((t + tl.w) / 8u, 0u, true, vec4(b0, b1), vec4(b2, b3));
}

// For MAX_BITS16 an invocation takes both halves of a texel of upstream
// gradients, which the loop by fours fetched twice: on lavapipe
// (tools/bench stream/maxpool-backward-f16, 2 cores) 20.1 -> 22.6 GB/s.
// Its two windows' blocks need not share a row.
void main() {
    read_tiling();
    if (MAX_BITS16) {
        SPAN_STRIDE(i, p.n / 8u) {
            uvec4 w = texelFetch(dy, int(i));
            uvec2 t, q;
            tile2x2_pair(8u * i, t, q);
            grads16(2u * i, w.xy, t.x, q.x);
            grads16(2u * i + 1u, w.zw, t.y, q.y);
        }
        if (gl_GlobalInvocationID.x == 0u && (p.n & 4u) != 0u) {
            uint t, q;
            tile2x2(p.n - 4u, t, q);
            grads16(p.n / 4u - 1u, texelFetch(dy, int(p.n / 8u)).xy, t, q);
        }
        return;
    }
    SPAN_STRIDE(j, p.n / 4u) {
        uint t, q; // the top-left input, t a multiple of 8
        tile2x2(4u * j, t, q);
        grads4(j, t, q);
    }
}
