#version 450
// axpy: dst = alpha*x + y, in fp32 whatever the dtypes. Deterministic mode:
// the product and the sum rounded apart, subnormals flushed (det.glsl).
// texel form
#define OP(x, y) (DETERMINISTIC ? det_mad(p.alpha, x, y) : p.alpha * (x) + (y))
#define DRIVER_HALVES_OK // adds, multiplies or converts what it decodes (texels.glsl)
#include "det.glsl"
#include "binary.glsl"
