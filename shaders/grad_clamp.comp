#version 450
// grad_clamp clamps every fp32 element of the tensors a block table locates
// to [-clip, clip] in place (gradient clipping by value). A NaN or an
// infinity is left as it is: clamping an overflow to a finite value would
// hide it from the step that follows. One workgroup per chunk.
// Deterministic mode compares flushed values (SwiftShader compares a
// subnormal as zero, lavapipe as itself) and clamps to the flushed clip: a
// kept element keeps its bits on every driver.
#include "common.glsl"
#include "det.glsl"

layout(push_constant) uniform Push { uint nchunks; float clip; } p;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
// Per chunk: first word, element count, dtype (always fp32 here), unused.
layout(set = 0, binding = 1) readonly buffer Table { uvec4 chunks[]; };

void main() {
    uint c = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (c >= p.nchunks) return;
    uvec4 e = chunks[c];
    uint cb = floatBitsToUint(det_ftz(p.clip));
    float hi = uintBitsToFloat(cb), lo = uintBitsToFloat(cb ^ 0x80000000u);
    for (uint i = gl_LocalInvocationIndex; i < e.y; i += gl_WorkGroupSize.x) {
        uint w = data[e.x + i];
        if ((w & 0x7F800000u) == 0x7F800000u) continue; // inf or NaN
        if (DETERMINISTIC) {
            float v = det_ftz(uintBitsToFloat(w));
            if (v > hi) data[e.x + i] = cb;
            else if (v < lo) data[e.x + i] = cb ^ 0x80000000u;
            continue;
        }
        float v = uintBitsToFloat(w);
        if (v > p.clip) data[e.x + i] = floatBitsToUint(p.clip);
        else if (v < -p.clip) data[e.x + i] = floatBitsToUint(-p.clip);
    }
}
