// Arithmetic that takes det.glsl's path in deterministic mode and the
// driver's otherwise, for kernels whose fast path must stay as it was
// (attention, pooling, convolution, embedding, dropout). DETERMINISTIC is a
// specialization constant, so a pipeline keeps one of the two branches.
// On the deterministic path every result is rounded once, with no
// contraction, and subnormal inputs and results are flushed (det.glsl says
// why).
#ifndef VKAMP_DET_EXTRA_GLSL
#define VKAMP_DET_EXTRA_GLSL

#include "det.glsl"

float xadd(float a, float b) { return DETERMINISTIC ? det_add(a, b) : a + b; }

float xsub(float a, float b) { return DETERMINISTIC ? det_sub(a, b) : a - b; }

float xmul(float a, float b) { return DETERMINISTIC ? det_mul(a, b) : a * b; }

vec4 xmul4(vec4 a, float b) { return vec4(xmul(a.x, b), xmul(a.y, b), xmul(a.z, b), xmul(a.w, b)); }

// xfma4 is a * b + c per component: fma on the fast path, a rounded
// product then a rounded sum on the deterministic one.
vec4 xfma4(vec4 a, vec4 b, vec4 c) {
    if (DETERMINISTIC) return vec4(det_mad(a.x, b.x, c.x), det_mad(a.y, b.y, c.y), det_mad(a.z, b.z, c.z), det_mad(a.w, b.w, c.w));
    return fma(a, b, c);
}

// xdot is s + a . b: the driver's dot, or on the deterministic path the
// products added to s one component after the other, x first.
float xdot(float s, vec4 a, vec4 b) {
    if (DETERMINISTIC) return det_mad(a.w, b.w, det_mad(a.z, b.z, det_mad(a.y, b.y, det_mad(a.x, b.x, s))));
    return s + dot(a, b);
}

float xexp(float x) { return DETERMINISTIC ? det_exp(x) : exp(x); }
float xlog(float x) { return DETERMINISTIC ? det_log(x) : log(x); }
float xdiv(float a, float b) { return DETERMINISTIC ? det_div(a, b) : a / b; }

#endif
