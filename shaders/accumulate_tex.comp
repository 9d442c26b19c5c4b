#version 450
// accumulate_tex is accumulate's texel form for CPU drivers (texels.glsl):
// dst += src for a block of 8 elements per invocation, src read as texels,
// dst (fp32) loaded and stored as uvec4s.
#define DRIVER_HALVES_OK // adds, multiplies or converts what it decodes (texels.glsl)
#define TEXELS
#include "texels.glsl"
#include "det_extra.glsl" // xadd: subnormals flushed in deterministic mode
vec4 xadd4(vec4 a, vec4 b) { return vec4(xadd(a.x, b.x), xadd(a.y, b.y), xadd(a.z, b.z), xadd(a.w, b.w)); }

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) uniform usamplerBuffer src;
layout(set = 0, binding = 1) buffer Dst { uvec4 dst[]; };

DEFINE_TEX_LOADS(src, src, IN0_DT)

void block(uint q, bool full) {
    vec4 lo, hi;
    src_oct(q, p.n, full, lo, hi);
    if (full) {
        dst[2u * q] = floatBitsToUint(xadd4(uintBitsToFloat(dst[2u * q]), lo));
        dst[2u * q + 1u] = floatBitsToUint(xadd4(uintBitsToFloat(dst[2u * q + 1u]), hi));
        return;
    }
    for (uint j = 0u; j < 8u && 8u * q + j < p.n; j++) {
        uint i = 8u * q + j;
        float s = j < 4u ? lo[j] : hi[j - 4u];
        dst[i >> 2][i & 3u] = floatBitsToUint(xadd(uintBitsToFloat(dst[i >> 2][i & 3u]), s));
    }
}

TEX_MAIN(block)
