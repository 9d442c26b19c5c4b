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

#endif
