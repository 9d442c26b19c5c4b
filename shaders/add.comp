#version 450
// add: dst = a + b, in fp32 whatever the dtypes.
#define OP(a, b) (a + b)
#include "binary.glsl"
