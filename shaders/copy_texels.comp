#version 450
// copy_texels copies n 16-byte texels from a uniform texel buffer binding to
// a storage buffer: the runtime's check of Texels bindings.
#include "common.glsl"

layout(push_constant) uniform Push { uint n; } p;
layout(set = 0, binding = 0) uniform usamplerBuffer src;
layout(set = 0, binding = 1) writeonly buffer Dst { uvec4 dst[]; };

void main() {
    GRID_STRIDE(i, p.n) { dst[i] = texelFetch(src, int(i)); }
}
