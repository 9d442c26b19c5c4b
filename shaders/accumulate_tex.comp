#version 450
// accumulate_tex is accumulate's texel form for CPU drivers (texels.glsl):
// dst += src for a block of 8 elements per invocation, src read as texels,
// dst (fp32) read as texels too and stored as 64-bit words, each word read
// and then written by the same invocation. On lavapipe (tools/bench,
// alternated) that took stream/accumulate-f32 from 0.63-0.64x of
// copy/buffer to 0.97-1.02x at 16M elements, and from 20.8 to 32.4 GB/s
// (medians of 5) at 200704, where dst was loaded as uvec4s.
#define DRIVER_HALVES_OK // adds, multiplies or converts what it decodes (texels.glsl)
#define TEXELS
#include "texels.glsl"
#include "det_extra.glsl" // xadd: subnormals flushed in deterministic mode
vec4 xadd4(vec4 a, vec4 b) { return vec4(xadd(a.x, b.x), xadd(a.y, b.y), xadd(a.z, b.z), xadd(a.w, b.w)); }

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) uniform usamplerBuffer src;
layout(set = 0, binding = 1) buffer Dst { uvec4 dst[]; };
layout(set = 0, binding = 1) buffer Dst64 { u64vec2 dst64[]; };
layout(set = 0, binding = 2) uniform usamplerBuffer dst_tex;

DEFINE_TEX_LOADS(src, src, IN0_DT)

void block(uint q, bool full) {
    vec4 lo, hi;
    src_oct(q, p.n, full, lo, hi);
    if (full) {
        vec4 d0 = uintBitsToFloat(texelFetch(dst_tex, int(2u * q))), d1 = uintBitsToFloat(texelFetch(dst_tex, int(2u * q + 1u)));
        dst64[2u * q] = wide2(floatBitsToUint(xadd4(d0, lo)));
        dst64[2u * q + 1u] = wide2(floatBitsToUint(xadd4(d1, hi)));
        return;
    }
    for (uint j = 0u; j < 8u && 8u * q + j < p.n; j++) {
        uint i = 8u * q + j;
        float s = j < 4u ? lo[j] : hi[j - 4u];
        dst[i >> 2][i & 3u] = floatBitsToUint(xadd(uintBitsToFloat(dst[i >> 2][i & 3u]), s));
    }
}

TEX_MAIN(block)
