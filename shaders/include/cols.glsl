// Body of a reduction over a middle axis: x viewed as [outer, k, inner],
// y[o, i] = scale * COMB over j of x[o, j, i]. One invocation per output
// (two per invocation for a 16-bit OUT_DT, so that each word of y has one
// writer) loops serially over j: neighbouring invocations read
// neighbouring words, and the order is fixed. The including file defines
// COMB and IDENTITY.
// The texel form (CPU drivers, inner a multiple of 8) makes a block of 8
// outputs per invocation, reading each of their k rows as texels, the
// same operations in the same order: the same bits.
#include "ewise.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
// OUT_DT: y's dtype; a 16-bit one is the fp32 result rounded once, as Cast
// would round it (a bias gradient under autocast, with no cast kernel).
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform ColsPush { uint outer; uint k; uint inner; float scale; } p;

float scaled(float acc) { return DETERMINISTIC ? det_mul(acc, p.scale) : acc * p.scale; }

#if defined(TEXELS)
#include "texels.glsl"
layout(set = 0, binding = 0) uniform usamplerBuffer x;

DEFINE_TEX_LOADS(x, x, IN0_DT)
DEFINE_TEX_OUTPUT(1, Y, y, OUT_DT)

vec4 comb4(vec4 a, vec4 v) {
    return vec4(COMB(a.x, det_in(v.x)), COMB(a.y, det_in(v.y)), COMB(a.z, det_in(v.z)), COMB(a.w, det_in(v.w)));
}

// fetch_row fetches block b of one row as texels (t1 for 32-bit dtypes).
void fetch_row(uint b, out uvec4 t0, out uvec4 t1) {
    t0 = texelFetch(x, int(dt_wide(IN0_DT) ? 2u * b : b));
    t1 = dt_wide(IN0_DT) ? texelFetch(x, int(2u * b + 1u)) : uvec4(0u);
}

// comb_row combines a row's block, as fetched, into lo and hi.
void comb_row(inout vec4 lo, inout vec4 hi, uvec4 t0, uvec4 t1) {
    vec4 a, c;
    OCT_DECODE(t0, t1, IN0_DT, a, c)
    lo = comb4(lo, a);
    hi = comb4(hi, c);
}

// AHEAD is how many rows block fetches ahead of their use: 16, where 4
// made the first machine's sum-cols 0.42-0.47x copy/buffer but an AMD EPYC's
// 0.23-0.26x (2 vCPUs; its misses take longer): 16 made that 0.43-0.45x
// (9.5 -> 17.1 GB/s, medians of 3 alternated runs). The loops over the
// fetched rows are unrolled by lavapipe, which keeps them in registers; past
// 16 (20, 24, 32) it left them in memory and ran at half the speed. An
// including file may set fewer (COLS_AHEAD).
#ifndef COLS_AHEAD
#define COLS_AHEAD 16u
#endif
const uint AHEAD = COLS_AHEAD;

// block makes outputs 8q..8q+7, which share o (inner is a multiple of 8),
// storing them where store. Consecutive rows are inner apart, so each
// fetch is from another page, past what the CPU prefetches: the rows are
// fetched AHEAD ahead of their use, so that those misses overlap, and the
// workgroup (consecutive blocks) meets at a barrier every 16 rows, so
// that lavapipe, which runs a workgroup's SIMD rows one after another
// between barriers, has them all read the same rows while those are in
// cache. On lavapipe (tools/bench's stream/sum-cols-f16, a sum over
// [16384, 1024] of fp16) the two took the first machine from 0.17x
// copy/buffer to 0.42-0.47x; each alone gave 0.25x and 0.29x.
void block(uint q, bool store) {
    uint e = 8u * q, o = e / p.inner, s = p.inner / 8u;
    uint b = (o * p.k * p.inner + (e - o * p.inner)) / 8u; // x's block of row 0
    uint last = b + (p.k - 1u) * s;
    uvec4 r[AHEAD], w[AHEAD];
    for (uint i = 0u; i < AHEAD; i++) fetch_row(min(b + i * s, last), r[i], w[i]);
    vec4 lo = vec4(IDENTITY), hi = vec4(IDENTITY);
    uint j = 0u;
    for (; j + AHEAD <= p.k; j += AHEAD, b += AHEAD * s) {
        for (uint i = 0u; i < AHEAD; i++) {
            comb_row(lo, hi, r[i], w[i]);
            fetch_row(min(b + (AHEAD + i) * s, last), r[i], w[i]);
        }
        if ((j + AHEAD) % 16u == 0u) barrier();
    }
    for (uint i = 0u; i + 1u < AHEAD; i++) // the last k % AHEAD rows, fetched already
        if (j + i < p.k) comb_row(lo, hi, r[i], w[i]);
    if (store)
        y_oct(q, 0u, true, vec4(scaled(lo.x), scaled(lo.y), scaled(lo.z), scaled(lo.w)),
              vec4(scaled(hi.x), scaled(hi.y), scaled(hi.z), scaled(hi.w)));
}

// strided is the invocation's place among the workgroup's blocks: its
// local index transposed, so that invocations a subgroup width apart take
// neighbouring blocks and a subgroup's lanes take blocks a subgroup count
// apart (lavapipe packs each subgroup from consecutive local indices). A
// workgroup that is not whole subgroups (span_width 1, common.glsl) keeps
// its order. lavapipe runs a subgroup's fetches before the next
// subgroup's, and its first subgroup then misses on every cache line of
// the workgroup's part of a row in one fetch, where with neighbouring
// blocks it missed on two (16 bytes a lane, 8 lanes) and the next
// subgroups missed on the rest in turn; the later subgroups find their
// lines in cache. A transpose of the local index is a one-to-one map
// whatever the packing, and the outputs are summed in the same order: the
// same bits. lavapipe, tools/bench stream/sum-cols-f16 (an AMD EPYC, 2
// cores, 3 alternated runs): 16.1-17.3 -> 17.5-18.6 GB/s.
uint strided() {
    uint i = gl_LocalInvocationIndex, s = span_width();
    return (i % s) * (gl_WorkGroupSize.x / s) + i / s;
}

// main takes blocks a workgroup at a time, every invocation through the
// same barriers: those past the last block repeat it without storing.
void main() {
    uint n = p.outer * p.inner / 8u, step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint t = strided();
    for (uint from = gl_WorkGroupID.x * gl_WorkGroupSize.x; from < n; from += step) {
        uint q = from + t;
        block(min(q, n - 1u), q < n);
    }
}
#else
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { uint y[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_STORE(y, y, OUT_DT)

// col returns output o.
float col(uint o) {
    uint q = o / p.inner;
    uint i = q * p.k * p.inner + (o - q * p.inner);
    float acc = IDENTITY;
    for (uint j = 0u; j < p.k; j++, i += p.inner) acc = COMB(acc, det_in(x_at(i)));
    return scaled(acc);
}

void main() {
    uint n = p.outer * p.inner;
    if (dt_wide(OUT_DT)) {
        GRID_STRIDE(o, n) y[o] = floatBitsToUint(col(o));
        return;
    }
    GRID_STRIDE(w, (n + 1u) >> 1) {
        float hi = 2u * w + 1u < n ? col(2u * w + 1u) : 0.0;
        y_pair(w, n, vec2(col(2u * w), hi));
    }
}
#endif
