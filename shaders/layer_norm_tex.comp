#version 450
// layer_norm_tex is layer_norm's form for CPU drivers, for rows of a
// multiple of 4 values: one invocation per row (layer_norm's SEG 1, with
// the same arithmetic in the same order), x, gamma and beta read as uniform
// texel buffers (lavapipe gathers texels in SIMD, where it loads storage
// buffers lane by lane), y stored as 64-bit words.
// Deterministic mode takes it too (det_norm.glsl: layer_norm's order).
#define TEXELS // for the 64-bit stores
#include "common.glsl"
#include "det_norm.glsl"

layout(constant_id = 1) const bool NO_BETA = false;

layout(push_constant) uniform Push { uint rows; uint cols; float eps; } p;
layout(set = 0, binding = 0) uniform usamplerBuffer x;
layout(set = 0, binding = 1) uniform usamplerBuffer g;
layout(set = 0, binding = 2) uniform usamplerBuffer b;
layout(set = 0, binding = 3) writeonly buffer Y { u64vec2 y[]; };
layout(set = 0, binding = 3) writeonly buffer Y8 { u64vec4 y8[]; };
layout(set = 0, binding = 4) writeonly buffer Stats { vec2 stats[]; };

vec4 at(usamplerBuffer t, uint i) { return uintBitsToFloat(texelFetch(t, int(i))); }

// put stores y's vec4 i as two 64-bit words, and put8 its vec4s 2i and
// 2i + 1 as four: lavapipe stores lane by lane, a loop over the lanes per
// store instruction, so fewer and wider stores take less time (tools/bench
// stream/layernorm-f32, 2 cores: 9.9-10.3 -> 12.7-13.0 GB/s).
void put(uint i, vec4 v) { y[i] = wide2(floatBitsToUint(v)); }
void put8(uint i, vec4 v0, vec4 v1) { y8[i] = u64vec4(wide2(floatBitsToUint(v0)), wide2(floatBitsToUint(v1))); }

// out4 is the normalized vec4 k of the row whose vec4s start at lo.
vec4 out4(uint lo, uint k, float mean, float rstd) {
    return (at(x, lo + k) - mean) * rstd * at(g, k) + (NO_BETA ? vec4(0.0) : at(b, k));
}

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
        put(lo + i, vec4(det_norm(v.x, mean, rstd, gv.x, bv.x), det_norm(v.y, mean, rstd, gv.y, bv.y),
                         det_norm(v.z, mean, rstd, gv.z, bv.z), det_norm(v.w, mean, rstd, gv.w, bv.w)));
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
        // Rows of whole blocks of 8 store them 32 bytes at once.
        uint pairs = (c4 & 1u) == 0u ? c4 / 2u : 0u;
        for (uint i = 0u; i < pairs; i++) put8(lo / 2u + i, out4(lo, 2u * i, mean, rstd), out4(lo, 2u * i + 1u, mean, rstd));
        for (uint i = 2u * pairs; i < c4; i++) put(lo + i, out4(lo, i, mean, rstd));
        stats[r] = vec2(mean, rstd);
    }
}
