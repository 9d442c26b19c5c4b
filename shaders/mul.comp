#version 450
// mul: dst = a * b, in fp32 whatever the dtypes.
#define OP(a, b) (a * b)
#include "binary.glsl"
