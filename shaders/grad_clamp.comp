#version 450
// grad_clamp clamps every fp32 element of the tensors a block table locates
// to [-clip, clip] in place (gradient clipping by value). A NaN or an
// infinity is left as it is: clamping an overflow to a finite value would
// hide it from the step that follows. One workgroup per chunk.
#include "common.glsl"

layout(push_constant) uniform Push { uint nchunks; float clip; } p;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
// Per chunk: first word, element count, dtype (always fp32 here), unused.
layout(set = 0, binding = 1) readonly buffer Table { uvec4 chunks[]; };

void main() {
    uint c = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (c >= p.nchunks) return;
    uvec4 e = chunks[c];
    for (uint i = gl_LocalInvocationIndex; i < e.y; i += gl_WorkGroupSize.x) {
        uint w = data[e.x + i];
        if ((w & 0x7F800000u) == 0x7F800000u) continue; // inf or NaN
        float v = uintBitsToFloat(w);
        if (v > p.clip) data[e.x + i] = floatBitsToUint(p.clip);
        else if (v < -p.clip) data[e.x + i] = floatBitsToUint(-p.clip);
    }
}
