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
uint look(uint h) {
    uvec4 t = texelFetch(table, int(h >> 3));
    uint k = (h >> 1) & 3u;
    uint w = k == 0u ? t.x : k == 1u ? t.y : k == 2u ? t.z : t.w;
    return (w >> ((h & 1u) * 16u)) & 0xFFFFu;
}

uint look2(uint w) { return look(w & 0xFFFFu) | (look(w >> 16) << 16); }

void block(uint q, bool full) {
    uvec4 t = texelFetch(a, int(q));
    uvec4 w = uvec4(look2(t.x), look2(t.y), look2(t.z), look2(t.w));
    if (full) {
        d[q] = wide2(w);
        return;
    }
    for (uint j = 0u; j < 4u && 8u * q + 2u * j < p.n; j++) // the padding half past an odd n is zeroed
        d_words[4u * q + j] = 8u * q + 2u * j + 1u < p.n ? w[j] : w[j] & 0xFFFFu;
}

TEX_MAIN(block)
