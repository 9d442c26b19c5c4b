// Workgroup tree reductions in shared memory. A workgroup is split into
// aligned segments of seg invocations (a power of two), each reducing one row,
// so short rows do not leave most of the workgroup idle. The tree order is
// fixed by seg and the workgroup size alone, never by subgroup size or timing,
// so results are the same bits on every run.
#ifndef VKAMP_REDUCE_GLSL
#define VKAMP_REDUCE_GLSL

#include "ewise.glsl"

#define NEG_INF uintBitsToFloat(0xFF800000u)
#define ADD(a, b) ((a) + (b))

#include "det.glsl"
// DADD is ADD, det_add in deterministic mode. det_in is a loaded value,
// flushed in deterministic mode: SwiftShader compares and adds subnormals
// as zero, lavapipe does not.
#define DADD(a, b) (DETERMINISTIC ? det_add(a, b) : (a) + (b))
float det_in(float v) { return DETERMINISTIC ? det_ftz(v) : v; }

shared float red[gl_WorkGroupSize.x];

// DEFINE_TREE(NAME, COMB) defines NAME(v, seg): COMB over the values of each
// segment, returned to all its invocations. Every invocation of the
// workgroup must call it (it has barriers), with the same seg; a segment of
// one invocation (CPU drivers) returns v without touching a barrier.
#define DEFINE_TREE(NAME, COMB)                                  \
    float NAME(float v, uint seg) {                              \
        if (seg == 1u) return v;                                 \
        uint t = gl_LocalInvocationID.x;                         \
        uint lane = t & (seg - 1u);                              \
        red[t] = v;                                              \
        barrier();                                               \
        for (uint s = seg >> 1; s > 0u; s >>= 1) {               \
            if (lane < s) red[t] = COMB(red[t], red[t + s]);     \
            barrier();                                           \
        }                                                        \
        float r = red[t - lane];                                 \
        barrier(); /* red is reused by the next call */          \
        return r;                                                \
    }

#endif
