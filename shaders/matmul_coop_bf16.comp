#version 450
// tiers: fp16
// matmul_coop_bf16 is matmul_coop for bf16 A and B, for devices whose
// cooperative matrices take bf16 (VK_KHR_shader_bfloat16's
// shaderBFloat16CooperativeMatrix and a bf16 x bf16 -> fp32 subgroup shape):
// see include/matmul_coop.glsl.
#define COOP_BF16
#include "matmul_coop.glsl"
