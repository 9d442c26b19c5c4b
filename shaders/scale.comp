#version 450
// scale: dst = alpha*a, in fp32 whatever the dtypes.
// texel form
#define DRIVER_HALVES_OK // adds, multiplies or converts what it decodes (texels.glsl)
#include "det.glsl"
// Deterministic mode: subnormal a and product flushed (det.glsl).
#define OP(a) (DETERMINISTIC ? det_mul(p.alpha, a) : p.alpha * (a))
#include "unary.glsl"
