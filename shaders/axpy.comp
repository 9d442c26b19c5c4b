#version 450
// axpy: dst = alpha*x + y, in fp32 whatever the dtypes.
#define OP(x, y) (p.alpha * (x) + (y))
#include "binary.glsl"
