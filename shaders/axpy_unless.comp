#version 450
// axpy_unless computes y += alpha * x on fp32 values, unless flag[0] is
// non-zero: the optimizer step that skips itself on the device when the
// gradient scaler found an inf, so no host waits for the flag.
#include "common.glsl"
#include "det.glsl"

layout(push_constant) uniform Push { uint n; float alpha; } p;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
layout(set = 0, binding = 2) readonly buffer Flag { float flag[]; };

void main() {
    if (flag[0] != 0.0) return;
    GRID_STRIDE(i, p.n) { y[i] = DETERMINISTIC ? det_mad(p.alpha, x[i], y[i]) : y[i] + p.alpha * x[i]; }
}
