#version 450
// copy32_tex is copy32's texel form for CPU drivers (texels.glsl): a texel
// of 4 words per invocation, stored as two 64-bit words, the last n%4 words
// stored one by one through a uint view of the output.
#define TEXELS
#include "common.glsl"

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) uniform usamplerBuffer src;
layout(set = 0, binding = 1) writeonly buffer Dst { u64vec2 dst[]; };
layout(set = 0, binding = 1) writeonly buffer DstWords { uint dst_words[]; }; // dst, word by word

void main() {
    uint full = p.n / 4u;
    GRID_STRIDE(q, full) {
        uvec4 x = texelFetch(src, int(q));
        dst[q] = u64vec2(packUint2x32(x.xy), packUint2x32(x.zw));
    }
    if (gl_GlobalInvocationID.x == 0u && 4u * full < p.n) {
        uvec4 x = texelFetch(src, int(full));
        for (uint j = 0u; 4u * full + j < p.n; j++) dst_words[4u * full + j] = x[j];
    }
}
