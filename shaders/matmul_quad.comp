#version 450
// tiers: packed storage16
// matmul_quad is the matmul for SwiftShader. Its shader compiler keeps loops
// whose bounds are specialization constants as loops (it does not unroll
// them), so the register kernels' tile loops run as loops there, with every
// access to their tile arrays a per-lane load or store through memory: about
// 30 times slower than the same code unrolled. Here the tile is a compile-time
// constant and glslc unrolls every loop but the k loop into the SPIR-V.
//
// The four lanes of a quad share the rows of their tile: lane l loads
// A(r, k+l) for the tile's TM rows, and subgroupQuadBroadcast (one swizzle on
// SwiftShader, whose SIMD width is four) hands each value to the others, so A
// costs four times fewer loads. A quad computes TM rows of 4*TN columns,
// lane l the TN columns from l*TN; the quads of a workgroup stack along M.
// The layout is read through strides, without branches, so one pipeline per
// operand encoding serves every transpose (DYN plans); rows and columns past
// the edge are clamped, computed and dropped, as in matmul_reg.
//
// Its pair forms, matmul_quad_pairs_n and matmul_quad_pairs_k, read a 16-bit
// B a word at a time where each word holds two elements a lane wants
// together (tensor's mmQuadForm picks the form): half the loads of B,
// which SwiftShader makes one lane at a time. Each form is straight-line
// code of its own: SwiftShader runs both sides of a branch (a pair form
// behind a uint specialization constant cost fp32 products 15%), a select
// between the two layouts took its compiler past 8 GB without finishing,
// and loops of one or no trips ran at 0.6x. Three boolean constants, the
// false ones frozen (vk/specfreeze.go), ran as fast as these kernels, but
// every launch would have to set exactly one of them; a kernel's name
// cannot be half set.
#include "matmul_quad.glsl"
