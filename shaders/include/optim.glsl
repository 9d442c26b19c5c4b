// Shared layout of the optimizer kernels: one dispatch updates every
// parameter of a group, reached through bindings of their memory blocks and a
// table of chunks (two uvec4 per chunk: word offsets of the parameter, its
// gradient and its two state buffers, then the element count). One workgroup per
// chunk. Nothing happens when found[0] is non-zero: the gradient scaler saw
// an inf, and the step is skipped on the device.
#ifndef VKAMP_OPTIM_GLSL
#define VKAMP_OPTIM_GLSL

#include "common.glsl"

// The parameter, gradient and moment buffers are arrays of vec4: a chunk
// whose word offsets are all multiples of 4 (chunk_vec4) is updated four
// elements at a time, with one vector access per buffer where one per
// element was (lavapipe runs every storage access as a loop over its lanes,
// whatever its width). WORD(A, i) is word i of such an array, for the other
// chunks and the last count % 4 elements of a chunk, read through a float
// view of the same binding (SwiftShader runs a dynamic component index of a
// vec4 slowly). Every element's arithmetic is the same on both paths, so
// are its bits.
layout(set = 0, binding = 0) buffer P { vec4 param[]; };
layout(set = 0, binding = 0) buffer PW { float param_w[]; };
layout(set = 0, binding = 1) readonly buffer G { vec4 grad[]; };
layout(set = 0, binding = 1) readonly buffer GW { float grad_w[]; };
layout(set = 0, binding = 2) buffer M { vec4 m1[]; };
layout(set = 0, binding = 2) buffer MW { float m1_w[]; };
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
layout(set = 0, binding = V_BINDING) buffer V { vec4 m2[]; };
layout(set = 0, binding = V_BINDING) buffer VW { float m2_w[]; };
#endif

// STORE4(A, I, V) stores vec4 V as vec4 I of A: in the texel forms as two
// 64-bit words, half the store instructions, each a loop over the lanes on
// lavapipe. On an AMD EPYC (Mesa 22.3, 2 cores, tools/bench, alternated)
// stream/adam-f32 went from 23.2-23.8 to 24.9-26.5 GB/s and the MNIST MLP
// step's Adam from 0.49-0.53 to 0.44-0.46 ms. (On a Sapphire Rapids, an
// earlier session measured the opposite: 6.5 against 10.4 GB/s.)
#if defined(TEXELS)
layout(set = 0, binding = 0) buffer P64 { u64vec2 param64[]; };
layout(set = 0, binding = 2) buffer M64 { u64vec2 m164[]; };
#ifdef SECOND_MOMENT
layout(set = 0, binding = V_BINDING) buffer V64 { u64vec2 m264[]; };
#endif
#define STORE4(A, I, V) A##64[I] = wide2(floatBitsToUint(V))
#else
#define STORE4(A, I, V) A[I] = V
#endif

#ifdef UNSCALE_BINDING
#include "det.glsl"
// UNSCALE multiplies each gradient by the loss scale's inverse as it is
// read, as LossScale.Unscale would have multiplied it in memory (the same
// product, so the same bits), after LossScale.Check found every product
// finite: one pass over the gradients fewer (PyTorch's fused optimizers
// take grad_scale). The gradients stay scaled in memory. The scaler's
// state is bound at UNSCALE_BINDING, its inverse at word 1; without it any
// buffer is.
layout(constant_id = 6) const bool UNSCALE = false;
layout(set = 0, binding = UNSCALE_BINDING) readonly buffer ScaleState { uint scale_state[]; };

float inv; // the loss scale's inverse (UNSCALE), else 1: read_inv, first in main

void read_inv() { inv = UNSCALE ? uintBitsToFloat(scale_state[1]) : 1.0; }

// unscaled is gradient g as unscale_check.glsl leaves it: untouched by an
// inverse of 1, else one product, kept out of any fused multiply-add
// (precise) as a stored product is.
float unscaled(float g) {
    if (!UNSCALE || inv == 1.0) return g;
    if (DETERMINISTIC) return det_mul(g, inv);
    precise float r = g * inv;
    return r;
}
vec4 unscaled4(vec4 g) { return vec4(unscaled(g.x), unscaled(g.y), unscaled(g.z), unscaled(g.w)); }
#endif

// VEC4 allows the vec4 path; without it every chunk goes word by word,
// which SwiftShader runs faster. It is false there, not a true "word by
// word" flag, because vk freezes only false constants into plain ones and
// SwiftShader drops dead code only after those: a vec4 path it cannot drop
// slows the word path too.
layout(constant_id = 4) const bool VEC4 = false;

#define WORD(A, I) A##_w[I]

// LOAD4(A, I) is vec4 I of A. In the texel forms (TEXELS: adam_tex,
// sgd_tex, adadelta_tex, for CPU drivers) it is a texel fetch: CPU drivers
// load a storage vec4 in a loop over the lanes but fetch a texel with one
// SIMD gather. Each buffer is also bound as a texel view of the same
// memory, from binding TEX_BINDING on (each element is read, then
// written, by the same invocation).
#if defined(TEXELS)
layout(set = 0, binding = TEX_BINDING) uniform usamplerBuffer param_tex;
layout(set = 0, binding = TEX_BINDING + 1) uniform usamplerBuffer grad_tex;
layout(set = 0, binding = TEX_BINDING + 2) uniform usamplerBuffer m1_tex;
#ifdef SECOND_MOMENT
layout(set = 0, binding = TEX_BINDING + 3) uniform usamplerBuffer m2_tex;
#endif
#define LOAD4(A, I) uintBitsToFloat(texelFetch(A##_tex, int(I)))
#else
#define LOAD4(A, I) A[I]
#endif

// chunk_vec4 reports whether word offsets at allow vec4 accesses (an absent
// moment's offset is 0).
bool chunk_vec4(uvec4 at) { return VEC4 && ((at.x | at.y | at.z | at.w) & 3u) == 0u; }

// FOR_EACH_QUAD runs BODY with q over the count / 4 groups of four elements
// of a vec4 chunk (element 4q on, vec4 index at / 4 + q), then E_BODY with
// e over its last count % 4 elements; in any other chunk E_BODY over every
// element. ip, ig, im, iv are the indexes into param, grad, m1 and m2.
#define FOR_EACH_QUAD(NCHUNKS, BODY, E_BODY)                                 \
    if (found[0] != 0.0) return;                                             \
    uint c = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;       \
    if (c >= (NCHUNKS)) return;                                              \
    uvec4 at = chunks[2u * c];                                               \
    uint count = chunks[2u * c + 1u].x;                                      \
    uint from = 0u;                                                          \
    if (chunk_vec4(at)) {                                                    \
        uvec4 at4 = at >> 2;                                                 \
        GROUP_STRIDE(q, 0u, count >> 2) {                                    \
            uint ip = at4.x + q, ig = at4.y + q, im = at4.z + q, iv = at4.w + q; \
            BODY                                                             \
        }                                                                    \
        from = count & ~3u;                                                  \
    }                                                                        \
    GROUP_STRIDE(e, from, count) {                                           \
        uint ip = at.x + e, ig = at.y + e, im = at.z + e, iv = at.w + e;     \
        E_BODY                                                               \
    }
#endif
