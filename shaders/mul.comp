#version 450
// mul: dst = a * b, in fp32 whatever the dtypes.
// texel form
#define OP(a, b) (DETERMINISTIC ? det_fmul(a, b) : (a) * (b))
#define DRIVER_HALVES_OK // adds, multiplies or converts what it decodes (texels.glsl)
#include "det.glsl"
#include "binary.glsl"
