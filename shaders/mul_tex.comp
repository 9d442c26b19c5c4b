#version 450
// mul_tex is mul.comp's texel form for CPU drivers (texels.glsl).
#define TEXELS
#define OP(a, b) (DETERMINISTIC ? det_fmul(a, b) : (a) * (b))
#include "det.glsl"
#include "ewise.glsl"
#include "binary.glsl"
