#version 450
// add: dst = a + b, in fp32 whatever the dtypes.
// texel form
#define OP(a, b) (DETERMINISTIC ? det_fadd(a, b) : (a) + (b))
#include "det.glsl"
#include "binary.glsl"
