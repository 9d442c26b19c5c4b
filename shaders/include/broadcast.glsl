// Shared part of the broadcasting kernels (NumPy/PyTorch rules): the output
// has shape d0..d5, padded with leading 1s, d5 innermost; every input has a
// stride per output dimension, 0 where it is broadcast. Each invocation
// makes two consecutive outputs, so a 16-bit output word has one writer.
#ifndef VKAMP_BROADCAST_GLSL
#define VKAMP_BROADCAST_GLSL

#include "ewise.glsl"

layout(push_constant) uniform BroadcastPush {
    uint n;
    float alpha;
    uint d0; uint d1; uint d2; uint d3; uint d4; uint d5;
    uint a0; uint a1; uint a2; uint a3; uint a4; uint a5;
    uint b0; uint b1; uint b2; uint b3; uint b4; uint b5;
    uint c0; uint c1; uint c2; uint c3; uint c4; uint c5;
} p;

// BC_STEP peels one dimension off the remaining index r. The six steps are
// written out, not looped: lavapipe counts every loop iteration of an
// invocation against its limit. A padding dimension of 1 skips its
// division (a uniform branch): merged shapes rarely need all six.
#define BC_STEP(D, A, B, C)                   \
    if (p.D != 1u) {                          \
        uint q = r / p.D;                     \
        uint k = r - q * p.D;                 \
        r = q;                                \
        o += k * uvec3(p.A, p.B, p.C);        \
    }

// bc_offsets returns the element offsets in inputs a, b and c of output
// element i.
uvec3 bc_offsets(uint i) {
    uint r = i;
    uvec3 o = uvec3(0u);
    BC_STEP(d5, a5, b5, c5)
    BC_STEP(d4, a4, b4, c4)
    BC_STEP(d3, a3, b3, c3)
    BC_STEP(d2, a2, b2, c2)
    BC_STEP(d1, a1, b1, c1)
    o += r * uvec3(p.a0, p.b0, p.c0);
    return o;
}

// BC_MAIN runs ONE(i), the value of output element i, over the output's
// pairs and stores them through d_pair.
#define BC_MAIN(ONE)                                          \
    void main() {                                             \
        GRID_STRIDE(w, (p.n + 1u) / 2u) {                     \
            uint i = 2u * w;                                  \
            vec2 v = vec2(ONE(i), 0.0);                       \
            if (i + 1u < p.n) v.y = ONE(i + 1u);              \
            d_pair(w, p.n, v);                                \
        }                                                     \
    }

#endif
