#version 450
// tiers: fp16
// target: vulkan1.3
// matmul_cm2_wg is the matmul of GPUs with all of VK_NV_cooperative_matrix2
// (workgroup scope, tensor addressing): see include/matmul_cm2_wg.glsl.
#include "matmul_cm2_wg.glsl"
