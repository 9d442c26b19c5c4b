#version 450
// unscale_check_tex is unscale_check.comp's texel form for CPU drivers: the
// gradients are read as texels (include/unscale_check.glsl).
#define TEXELS
#include "unscale_check.glsl"
