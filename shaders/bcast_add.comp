#version 450
// bcast_add: dst = a + b, a and b broadcast to the output shape.
#define OP(a, b) (DETERMINISTIC ? det_fadd(a, b) : (a) + (b))
#include "det.glsl"
#include "bcast_binary.glsl"
