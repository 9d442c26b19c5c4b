#version 450
// lut16 maps n 16-bit elements through a table of 65536 16-bit results,
// indexed by each element's bits: a unary op of 16-bit dtypes whose table
// tensor/tables.go made by running the op's own kernel on every value, so
// the bits are the kernel's. On lavapipe a lookup is a texel fetch, mostly
// from cache, far cheaper than GELU's arithmetic. Texel form only: CPU
// drivers alone take it.
#define TEXELS
#include "texels.glsl"

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) uniform usamplerBuffer a;
layout(set = 0, binding = 1) uniform usamplerBuffer table; // 8192 texels, eight results each
DEFINE_TEX_OUTPUT(2, D, d, DT_F16)

// look returns the result for the 16-bit value h.
uint look(uint h) { return (texelFetch(table, int(h >> 3))[(h >> 1) & 3u] >> ((h & 1u) * 16u)) & 0xFFFFu; }

uint look2(uint w) { return look(w & 0xFFFFu) | (look(w >> 16) << 16); }

void block(uint q, bool full) {
    uvec4 t = texelFetch(a, int(q));
    d_halves(q, p.n, full, uvec4(look2(t.x), look2(t.y), look2(t.z), look2(t.w)));
}

TEX_MAIN(block)
