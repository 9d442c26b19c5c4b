#version 450
// sgd_tex is sgd.comp's texel form for CPU drivers: the vec4 path reads
// the parameters, gradients and momentum buffers as texels (include/optim.glsl).
#define TEXELS
#include "sgd.glsl"
