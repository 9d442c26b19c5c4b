#version 450
// tiers: fp16
// matmul_coop is the matmul for devices with cooperative matrices
// (VK_KHR_cooperative_matrix with an fp16 x fp16 -> fp32 subgroup shape):
// see include/matmul_coop.glsl.
#include "matmul_coop.glsl"
