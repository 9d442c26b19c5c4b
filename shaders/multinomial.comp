#version 450
// multinomial: for each row r of probs [rows, n] (any floating dtype IN0_DT)
// and its running sums cdf (fp32, CumSum's), d[r, s] for s < samples is the
// first column j with cdf[r, j] > u, u = cdf[r, n-1] times a uniform draw in
// [0, 1) from a hash of (seed, r, s): column j with probability
// probs[r, j] / sum, with replacement; a zero-probability column is never
// drawn. A row with a negative, NaN or infinite entry, or summing to 0,
// raises the device's assert (assert.glsl: the column, or -1 for a zero
// sum) and gets -1 draws. One invocation per row.
#define ASSERT_BINDING 3
#include "common.glsl"
#include "dtype.glsl"
#include "assert.glsl"
#include "dropout.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform Push { uint rows; uint n; uint samples; uint seed; } p;
layout(set = 0, binding = 0) readonly buffer Probs { uint probs[]; };
layout(set = 0, binding = 1) readonly buffer Cdf { float cdf[]; };
layout(set = 0, binding = 2) writeonly buffer D { uint d[]; };

// prob returns element i of probs as fp32.
float prob(uint i) {
    if (dt_wide(IN0_DT)) return uintBitsToFloat(probs[i]);
    return half_to_f32((probs[i >> 1] >> ((i & 1u) << 4)) & 0xFFFFu, IN0_DT);
}

void main() {
    GRID_STRIDE(r, p.rows) {
        uint base = r * p.n;
        float total = cdf[base + p.n - 1u];
        uint bad = 0xFFFFFFFFu; // the first bad column; none
        for (uint j = 0u; j < p.n && bad == 0xFFFFFFFFu; j++) {
            float v = prob(base + j);
            if (!(v >= 0.0) || isinf(v)) bad = j;
        }
        if (bad == 0xFFFFFFFFu && !(total > 0.0)) bad = 0xFFFFFFFFu - 1u;
        uint hseed = pcg_hash(p.seed);
        for (uint s = 0u; s < p.samples; s++) {
            uint out_ = r * p.samples + s;
            if (bad != 0xFFFFFFFFu) {
                if (s == 0u) raise_assert(r, bad == 0xFFFFFFFEu ? 0xFFFFFFFFu : bad, p.n);
                d[out_] = 0xFFFFFFFFu;
                continue;
            }
            // 24 random bits: u in [0, total), exactly a multiple of 2^-24.
            float u = float(pcg_hash(out_ ^ hseed) >> 8u) * (1.0 / 16777216.0) * total;
            uint lo = 0u, hi = p.n; // the first j with cdf[j] > u lies in [lo, hi]
            while (lo < hi) {
                uint mid = (lo + hi) / 2u;
                if (cdf[base + mid] > u) hi = mid; else lo = mid + 1u;
            }
            if (lo == p.n) { // u rounded up to total: the last column drawn can be
                lo = p.n - 1u;
                while (lo > 0u && !(cdf[base + lo] > cdf[base + lo - 1u])) lo--;
            }
            d[out_] = lo;
        }
    }
}
