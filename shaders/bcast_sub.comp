#version 450
// bcast_sub: dst = a - b, a and b broadcast to the output shape.
#define OP(a, b) (DETERMINISTIC ? det_fsub(a, b) : (a) - (b))
#include "det.glsl"
#include "bcast_binary.glsl"
