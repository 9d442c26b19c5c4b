#version 450
// tiers: fp16
// matmul_coop is the matmul for devices with cooperative matrices
// (VK_KHR_cooperative_matrix with a 16x16x16 fp16 x fp16 -> fp32 subgroup
// shape): see include/matmul_coop.glsl. The generator rewrites its
// GL_NV_cooperative_matrix SPIR-V to SPV_KHR_cooperative_matrix.
#include "matmul_coop.glsl"
