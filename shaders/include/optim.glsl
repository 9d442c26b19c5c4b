// Shared layout of the optimizer kernels: one dispatch updates every
// parameter of a group, reached through bindings of their memory blocks and a
// table of chunks (two uvec4 per chunk: word offsets of the parameter, its
// gradient and its two state buffers, then the element count). One workgroup per
// chunk. Nothing happens when found[0] is non-zero: the gradient scaler saw
// an inf, and the step is skipped on the device.
#ifndef VKAMP_OPTIM_GLSL
#define VKAMP_OPTIM_GLSL

#include "common.glsl"

layout(set = 0, binding = 0) buffer P { float param[]; };
layout(set = 0, binding = 1) readonly buffer G { float grad[]; };
layout(set = 0, binding = 2) buffer M { float m1[]; };
layout(set = 0, binding = 3) readonly buffer Table { uvec4 chunks[]; };
layout(set = 0, binding = 4) readonly buffer Found { float found[]; };
#ifndef NO_STEPS
// steps[0]: the optimizer's completed steps before this one. A kernel that
// does not read it defines NO_STEPS (glslc drops unused bindings).
layout(set = 0, binding = 5) readonly buffer Steps { uint steps[]; };
#define V_BINDING 6
#else
#define V_BINDING 5
#endif
#ifdef SECOND_MOMENT
layout(set = 0, binding = V_BINDING) buffer V { float m2[]; };
#endif

#define FOR_EACH_ELEMENT(NCHUNKS, BODY)                                      \
    if (found[0] != 0.0) return;                                             \
    uint c = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;       \
    if (c >= (NCHUNKS)) return;                                              \
    uvec4 at = chunks[2u * c];                                               \
    uint count = chunks[2u * c + 1u].x;                                      \
    for (uint e = gl_LocalInvocationIndex; e < count; e += gl_WorkGroupSize.x) { \
        uint ip = at.x + e, ig = at.y + e, im = at.z + e, iv = at.w + e;     \
        BODY                                                                 \
    }

#endif
