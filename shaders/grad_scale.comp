#version 450
// grad_scale multiplies every fp32 element of the tensors a block table
// locates by coef[0] in place (gradient clipping by norm), not at all when
// it is 1 so bits stay. One workgroup per chunk. Deterministic mode:
// subnormal elements and products flushed (det.glsl).
#include "common.glsl"
#include "det.glsl"

layout(push_constant) uniform Push { uint nchunks; } p;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
// Per chunk: first word, element count, dtype (always fp32 here), unused.
layout(set = 0, binding = 1) readonly buffer Table { uvec4 chunks[]; };
layout(set = 0, binding = 2) readonly buffer Coef { float coef[]; };

void main() {
    uint c = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    float k = coef[0];
    if (c >= p.nchunks || floatBitsToUint(k) == floatBitsToUint(1.0)) return;
    uvec4 e = chunks[c];
    for (uint i = gl_LocalInvocationIndex; i < e.y; i += gl_WorkGroupSize.x) {
        float x = uintBitsToFloat(data[e.x + i]);
        data[e.x + i] = floatBitsToUint(DETERMINISTIC ? det_mul(x, k) : x * k);
    }
}
