#version 450
// adadelta_tex is adadelta.comp's texel form for CPU drivers: the vec4 path reads
// the parameters, gradients and running averages as texels (include/optim.glsl).
#define TEXELS
#include "adadelta.glsl"
