#version 450
// tiers: storage16
// matmul_coop_emu is matmul_coop with its cooperative-matrix operations
// emulated in plain GLSL, for tests: it runs everything else of the kernel
// (tiling, staging, edges, the epilogue) for any subgroup shape, with fp16
// or bf16 inputs (EMU_BF16), on devices without cooperative matrices. Slow;
// never chosen by MatMul.
#define COOP_EMU
#include "matmul_coop.glsl"
