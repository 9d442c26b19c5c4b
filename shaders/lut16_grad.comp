#version 450
// lut16_grad: dst = dy * table[x] for n elements, x of a 16-bit dtype and
// table its op's fp32 derivatives for all 65536 values of x, indexed by
// their bits: the backward of a unary op whose table tensor/tables.go made
// by running the op's backward kernel with dy = 1, so the bits are the
// kernel's. Texel form only: CPU drivers alone take it (lut16.comp).
#define TEXELS
#include "texels.glsl"
#include "det.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32; // dy's
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) uniform usamplerBuffer dy;
layout(set = 0, binding = 1) uniform usamplerBuffer x;     // the 16-bit elements' bits
layout(set = 0, binding = 2) uniform usamplerBuffer table; // 16384 texels, four fp32 results each
DEFINE_TEX_LOADS(dy, dy, IN0_DT)
DEFINE_TEX_OUTPUT(3, D, d, OUT_DT)

// grad returns dy times the derivative at the 16-bit value h, as the
// backward kernels compute it (gelu_backward.comp).
float grad(float g, uint h) {
    float f = uintBitsToFloat(texelFetch(table, int(h >> 2))[h & 3u]);
    return DETERMINISTIC ? det_mul(g, f) : g * f;
}

vec2 grad2(vec2 g, uint w) { return vec2(grad(g.x, w & 0xFFFFu), grad(g.y, w >> 16)); }

void block(uint q, bool full) {
    vec4 lo, hi;
    dy_oct(q, p.n, full, lo, hi);
    uvec4 h = texelFetch(x, int(q));
    d_oct(q, p.n, full, vec4(grad2(lo.xy, h.x), grad2(lo.zw, h.y)), vec4(grad2(hi.xy, h.z), grad2(hi.zw, h.w)));
}

TEX_MAIN(block)
