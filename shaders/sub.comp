#version 450
// sub: dst = a - b, in fp32 whatever the dtypes.
#define OP(a, b) (a - b)
#include "binary.glsl"
