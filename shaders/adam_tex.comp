#version 450
// adam_tex is adam.comp's texel form for CPU drivers: the vec4 path reads
// the parameters, gradients and moments as texels (include/optim.glsl);
// every element's arithmetic is adam.comp's.
#define TEXELS
#include "adam.glsl"
