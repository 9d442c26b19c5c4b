// The layer norm's deterministic arithmetic, shared by layer_norm and
// layer_norm_tex: one invocation per row, whose sums keep four partial
// sums (element i in sum i % 4, four independent chains for a CPU) added
// as (s0 + s1) + (s2 + s3), the same order in both kernels. Inputs are
// flushed as they are read: SwiftShader reads a subnormal as zero.
#ifndef VKAMP_DET_NORM_GLSL
#define VKAMP_DET_NORM_GLSL

#include "det.glsl"

vec4 det_ftz4(vec4 v) { return vec4(det_ftz(v.x), det_ftz(v.y), det_ftz(v.z), det_ftz(v.w)); }

// det_acc4 adds v to the partial sums s; det_sq4 adds the squares of v - m.
vec4 det_acc4(vec4 s, vec4 v) { return vec4(det_add(s.x, v.x), det_add(s.y, v.y), det_add(s.z, v.z), det_add(s.w, v.w)); }
float det_sq(float q, float v, float m) {
    float d = det_sub(v, m);
    return det_mad(d, d, q);
}
vec4 det_sq4(vec4 q, vec4 v, float m) { return vec4(det_sq(q.x, v.x, m), det_sq(q.y, v.y, m), det_sq(q.z, v.z, m), det_sq(q.w, v.w, m)); }
float det_sum4(vec4 s) { return det_add(det_add(s.x, s.y), det_add(s.z, s.w)); }

// det_norm is one output: (v - mean) * rstd * g + b.
float det_norm(float v, float mean, float rstd, float g, float b) { return det_mad(det_mul(det_sub(v, mean), rstd), g, b); }

#endif
