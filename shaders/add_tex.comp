#version 450
// add_tex is add.comp's texel form for CPU drivers (texels.glsl).
#define TEXELS
#define OP(a, b) (DETERMINISTIC ? det_fadd(a, b) : (a) + (b))
#include "det.glsl"
#include "ewise.glsl"
#include "binary.glsl"
