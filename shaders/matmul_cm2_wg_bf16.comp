#version 450
// tiers: fp16
// target: vulkan1.3
// matmul_cm2_wg_bf16 is matmul_cm2_wg for bf16 A and B (VK_KHR_shader_bfloat16's
// cooperative matrices): see include/matmul_cm2_wg.glsl.
#define COOP_BF16
#include "matmul_cm2_wg.glsl"
