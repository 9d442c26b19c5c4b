#version 450
// bcast_mul: dst = a * b, a and b broadcast to the output shape.
#define OP(a, b) (a * b)
#include "bcast_binary.glsl"
