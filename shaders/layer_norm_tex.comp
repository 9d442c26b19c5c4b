#version 450
// layer_norm_tex is layer_norm's form for CPU drivers, for rows of a
// multiple of 4 values: one invocation per row (layer_norm's SEG 1, with
// the same arithmetic in the same order), x, gamma and beta read as uniform
// texel buffers (lavapipe gathers texels in SIMD, where it loads storage
// buffers lane by lane), y stored as vec4s.
// Deterministic mode takes it too (det_norm.glsl: layer_norm's order).
#include "common.glsl"
#include "det_norm.glsl"

layout(constant_id = 1) const bool NO_BETA = false;

layout(push_constant) uniform Push { uint rows; uint cols; float eps; } p;
layout(set = 0, binding = 0) uniform usamplerBuffer x;
layout(set = 0, binding = 1) uniform usamplerBuffer g;
layout(set = 0, binding = 2) uniform usamplerBuffer b;
layout(set = 0, binding = 3) writeonly buffer Y { vec4 y[]; };
layout(set = 0, binding = 4) writeonly buffer Stats { vec2 stats[]; };

vec4 at(usamplerBuffer t, uint i) { return uintBitsToFloat(texelFetch(t, int(i))); }

// det_row is main's work for row r on the deterministic path.
void det_row(uint r) {
    uint c4 = p.cols / 4u, lo = r * c4;
    vec4 s = vec4(0.0);
    for (uint i = 0u; i < c4; i++) s = det_acc4(s, det_ftz4(at(x, lo + i)));
    float n = float(p.cols);
    float mean = det_div(det_sum4(s), n);
    vec4 q = vec4(0.0);
    for (uint i = 0u; i < c4; i++) q = det_sq4(q, det_ftz4(at(x, lo + i)), mean);
    float rstd = det_rsqrt(det_add(det_div(det_sum4(q), n), det_ftz(p.eps)));
    for (uint i = 0u; i < c4; i++) {
        vec4 v = det_ftz4(at(x, lo + i)), gv = det_ftz4(at(g, i)), bv = NO_BETA ? vec4(0.0) : det_ftz4(at(b, i));
        y[lo + i] = vec4(det_norm(v.x, mean, rstd, gv.x, bv.x), det_norm(v.y, mean, rstd, gv.y, bv.y),
                         det_norm(v.z, mean, rstd, gv.z, bv.z), det_norm(v.w, mean, rstd, gv.w, bv.w));
    }
    stats[r] = vec2(mean, rstd);
}

void main() {
    uint c4 = p.cols / 4u;
    GRID_STRIDE(r, p.rows) {
        if (DETERMINISTIC) {
            det_row(r);
            continue;
        }
        uint lo = r * c4;
        float s = 0.0;
        for (uint i = 0u; i < c4; i++) {
            vec4 v = at(x, lo + i);
            s += v.x; s += v.y; s += v.z; s += v.w;
        }
        float mean = s / float(p.cols);
        float q = 0.0;
        for (uint i = 0u; i < c4; i++) {
            vec4 d = at(x, lo + i) - mean;
            q += d.x * d.x; q += d.y * d.y; q += d.z * d.z; q += d.w * d.w;
        }
        float rstd = inversesqrt(q / float(p.cols) + p.eps);
        for (uint i = 0u; i < c4; i++) y[lo + i] = (at(x, lo + i) - mean) * rstd * at(g, i) + (NO_BETA ? vec4(0.0) : at(b, i));
        stats[r] = vec2(mean, rstd);
    }
}
