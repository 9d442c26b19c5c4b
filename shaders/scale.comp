#version 450
// scale: dst = alpha*a, in fp32 whatever the dtypes.
#define OP(a) (p.alpha * (a))
#include "unary.glsl"
