// Shared setup for vkamp kernels: GLSL version, extensions per tier, and the
// grid-stride loop that keeps every dispatch within maxComputeWorkGroupCount.
#ifndef VKAMP_COMMON_GLSL
#define VKAMP_COMMON_GLSL

#if defined(TIER_STORAGE16) || defined(TIER_FP16)
#extension GL_EXT_shader_16bit_storage : require
#endif
#if defined(TIER_FP16)
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#if defined(TEXELS) || defined(SPANS)
// SPAN_STRIDE below reads the subgroup size.
#extension GL_KHR_shader_subgroup_basic : require
#endif
#if defined(TEXELS) || defined(MATMUL_WIDE_OUT)
// The texel forms (texels.glsl) and matmul_tex store 64-bit words.
#extension GL_ARB_gpu_shader_int64 : require
#endif

// The workgroup size is specialization constant 0 so the runtime can fit it to
// the device (SwiftShader allows 256 invocations, lavapipe 1024).
layout(local_size_x = 64, local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

// GRID_STRIDE loops i over [0, n) across all invocations of the dispatch.
#define GRID_STRIDE(i, n) \
    for (uint i = gl_GlobalInvocationID.x; i < (n); i += gl_NumWorkGroups.x * gl_WorkGroupSize.x)

// SPAN_STRIDE(i, n) loops i over [0, n) across all invocations of the
// dispatch, as GRID_STRIDE does, but hands each run of subgroup-width
// invocations (by local index) one contiguous span, which its lanes walk
// side by side. A CPU driver runs a subgroup as one SIMD batch, and all of
// a batch's loop before the next batch's: GRID_STRIDE makes that a walk of
// short runs a grid apart, which the CPU's prefetchers do not follow, and
// a streaming kernel that outgrew the caches ran at a third of the speed
// (lavapipe, 16M-element add: 4.8 -> 12.3 GB/s). Any packing of
// invocations into subgroups covers [0, n) exactly once; a workgroup that
// is not whole subgroups gives each invocation its own span.
#if defined(TEXELS) || defined(SPANS)
uint span_width() { return gl_WorkGroupSize.x % gl_SubgroupSize == 0u ? gl_SubgroupSize : 1u; }
uint span_len(uint count, uint spans) {
    uint w = span_width();
    return ((count + spans - 1u) / spans + w - 1u) / w * w;
}
// SPANS_OVER(i, from, n, k, spans): i over span k of spans over [from, n).
#define SPANS_OVER(i, from, n, k, spans)                                      \
    for (uint len_ = span_len((n) > (from) ? (n) - (from) : 0u, spans),      \
              i = (from) + (k) * len_ + gl_LocalInvocationIndex % span_width(), \
              end_ = min((from) + (k) * len_ + len_, n);                      \
         i < end_; i += span_width())
#define SPAN_STRIDE(i, n)                                                     \
    SPANS_OVER(i, 0u, n, gl_WorkGroupID.x * (gl_WorkGroupSize.x / span_width()) + gl_LocalInvocationIndex / span_width(), \
               gl_NumWorkGroups.x * (gl_WorkGroupSize.x / span_width()))
#endif

// GROUP_STRIDE(i, from, n) loops i over [from, n) across the workgroup's
// invocations: in the texel forms (CPU drivers) by spans, as SPAN_STRIDE.
#if defined(TEXELS)
#define GROUP_STRIDE(i, from, n)                                              \
    SPANS_OVER(i, from, n, gl_LocalInvocationIndex / span_width(), gl_WorkGroupSize.x / span_width())
#else
#define GROUP_STRIDE(i, from, n)                                              \
    for (uint i = (from) + gl_LocalInvocationIndex; i < (n); i += gl_WorkGroupSize.x)
#endif

#if defined(TEXELS) || defined(MATMUL_WIDE_OUT)
// wide2 packs four words (a texel's, a vec4's bits) as two 64-bit words,
// low word first: the texel forms store those, half the stores of uvec4s.
u64vec2 wide2(uvec4 x) { return u64vec2(packUint2x32(x.xy), packUint2x32(x.zw)); }
#endif

#endif
