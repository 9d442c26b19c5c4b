#version 450
// causal_mask writes causal attention's [t, t] Int32 mask: 1 where the key
// comes after the query (column above row), 0 elsewhere. Made on the device,
// it needs no upload, so a captured step can make it.
#include "common.glsl"

layout(push_constant) uniform Push { uint t; } p;
layout(set = 0, binding = 0) writeonly buffer Out { uint o[]; };

void main() {
    GRID_STRIDE(i, p.t * p.t) { o[i] = i % p.t > i / p.t ? 1u : 0u; }
}
