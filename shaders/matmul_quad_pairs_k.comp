#version 450
// tiers: packed storage16
// matmul_quad_pairs_k is matmul_quad for a 16-bit B, transposed, of even
// K: each word of B read is two neighbouring k (matmul_quad.glsl).
#define QUAD_PAIRS_K
#include "matmul_quad.glsl"
