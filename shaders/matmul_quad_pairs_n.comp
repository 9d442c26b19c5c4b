#version 450
// tiers: packed storage16
// matmul_quad_pairs_n is matmul_quad for a 16-bit B, untransposed, of even
// N: each word of B read is two neighbouring columns (matmul_quad.glsl).
#define QUAD_PAIRS_N
#include "matmul_quad.glsl"
