#version 450
// tiers: storage16
// matmul_coop_emu is matmul_coop with its cooperative-matrix operations
// emulated in plain GLSL, for tests: CPU drivers have no cooperative
// matrices, and this runs everything else of the kernel (tiling, staging,
// edges, the epilogue) on them. Slow; never chosen by MatMul.
#define COOP_EMU
#include "matmul_coop.glsl"
