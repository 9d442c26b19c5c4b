#version 450
// tiers: fp16
// target: vulkan1.3
// matmul_cm2 is matmul_coop on VK_NV_cooperative_matrix2's subgroup-scope
// features: fragments of any multiple of the device's flexible-dimension
// granularity (CM x CN x CK, not only the shapes it lists), and an epilogue
// that goes from the accumulators to memory element by element
// (coopMatPerElementNV, matmul_cm2.glsl) instead of through shared memory.
// The form Mesa 26's lavapipe runs; GPUs with workgroup scope and tensor
// addressing run matmul_cm2_wg.
#define COOP_CM2
#include "matmul_coop.glsl"
