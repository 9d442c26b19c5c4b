#version 450
// bcast_eq: dst = 1 where a == b, else 0 (NaN equals nothing), a and b
// broadcast to the output shape.
#include "ewise.glsl"
#define OP(a, b) ((!is_nan(a) && (a) == (b)) ? 1.0 : 0.0)
#include "bcast_binary.glsl"
