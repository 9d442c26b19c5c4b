#version 450
// pool2x2_backward_tex is pool2d_backward's texel form for the windows of
// pool2x2_tex (kernel 2, stride 2, no padding, planes of even height, rows
// whose width W is a multiple of 8). Those windows tile the input, so every
// input pixel is in exactly one: each invocation takes four consecutive
// upstream gradients of a row (and for max pooling their argmaxes), one
// texel fetch each, and stores the two blocks of 8 input pixels under them,
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

void main() {
    SPAN_STRIDE(j, p.n / 4u) {
        uint e = 4u * j;
        uint t, q; // the top-left input, t a multiple of 8
        tile2x2(e, t, q);
        vec4 g = dy4(j);
        uvec4 at = MODE == POOL_MAX ? texelFetch(idx, int(j)) : uvec4(0u);
        vec2 t0, t1, t2, t3, b0, b1, b2, b3;
        grads(g.x, at.x, q, p.w, t0, b0);
        grads(g.y, at.y, q + 2u, p.w, t1, b1);
        grads(g.z, at.z, q + 4u, p.w, t2, b2);
        grads(g.w, at.w, q + 6u, p.w, t3, b3);
        d_oct(t / 8u, 0u, true, vec4(t0, t1), vec4(t2, t3));
        d_oct((t + p.w) / 8u, 0u, true, vec4(b0, b1), vec4(b2, b3));
    }
}
