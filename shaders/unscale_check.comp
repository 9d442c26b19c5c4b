#version 450
// unscale_check is the gradient scaler's fused pass over all gradients: it
// multiplies every element by inv_scale in place (even non-finite ones, as
// PyTorch does; not at all when inv_scale is 1, so bits stay) and raises a
// flag if any element is inf or NaN, before or after the multiply. Checking
// the result too is beyond PyTorch: once the scale falls below about
// 2.9e-39 (or is 0), inv_scale is +inf and a zero gradient becomes NaN, and
// with a scale below 1 a finite gradient can overflow; either would reach
// the weights unflagged. The gradients are reached through one
// binding of their memory block and a table of chunks, so one dispatch
// covers them all. One workgroup per chunk; an invocation that sees an inf
// or NaN raises the flags by ORing 1.0's bits into them (atomics, no
// barrier).
// Deterministic mode: subnormal gradients, reciprocals and products are
// flushed (det.glsl), as SwiftShader computes them.
#include "unscale_check.glsl"
