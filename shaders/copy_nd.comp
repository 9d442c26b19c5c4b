#version 450
// copy_nd copies a strided view of x, of up to 8 dimensions, into the
// contiguous d: element e of d, at index (i0, ..., i7) of d's shape
// (d0, ..., d7), is x[base + sum ik*sk]. Strides may be 0 (a broadcast) and
// the sum wraps modulo 2^32, so a negative offset is a huge base. Elements
// whose index along `axis` lies outside [lo, hi) keep d's value: Concat
// writes one input per dispatch into its slab of the output. Only the words
// [w0, w1) of d are visited. Each invocation owns one word of d, so a 16-bit
// word has one writer (the padding half past an odd n is zeroed). Elements
// are copied as bits, in x's dtype IN0_DT, whatever it is.
#include "common.glsl"
#include "dtype.glsl"

#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 1) const uint IN0_DT = DT_F32;
// RANK is how many of the 8 dimensions are used (the last RANK): the
// runtime merges what it can, and each dimension costs an integer division
// per element, which CPU drivers run lane by lane.
layout(constant_id = 2) const uint RANK = 8;

layout(push_constant) uniform CopyNdPush {
    uint n;            // elements of d
    uint w0, w1;       // the words of d visited
    uint base;         // x's element at index 0
    uint axis, lo, hi; // elements outside [lo, hi) along axis are kept
    uint d0, d1, d2, d3, d4, d5, d6, d7; // d's shape, padded in front with 1s
    uint s0, s1, s2, s3, s4, s5, s6, s7; // x's strides in elements
} p;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) buffer D { uint d[]; };

// src returns x's element offset for element e of d, and whether e is in
// the written slab; last is e's index along the last dimension.
uint src(uint e, out bool in_, out uint last) {
    uint dims[8] = uint[8](p.d0, p.d1, p.d2, p.d3, p.d4, p.d5, p.d6, p.d7);
    uint strides[8] = uint[8](p.s0, p.s1, p.s2, p.s3, p.s4, p.s5, p.s6, p.s7);
    uint off = p.base, r = e;
    in_ = true;
    last = 0u;
    [[unroll]] for (int k = 7; k >= 0; k--) {
        if (uint(k) + RANK >= 8u) {
            uint q = r / dims[k];
            uint i = r - q * dims[k];
            r = q;
            if (k == 7) last = i;
            off += i * strides[k];
            if (uint(k) == p.axis && (i < p.lo || i >= p.hi)) in_ = false;
        }
    }
    return off;
}

uint bits16(uint i) { return (x[i >> 1] >> ((i & 1u) * 16u)) & 0xFFFFu; }

void main() {
    GRID_STRIDE(t, p.w1 - p.w0) {
        uint w = p.w0 + t;
        bool ina, inb;
        uint last;
        if (dt_wide(IN0_DT)) {
            uint o = src(w, ina, last);
            if (ina) d[w] = x[o];
            continue;
        }
        uint e = 2u * w;
        bool two = e + 1u < p.n;
        uint oa = src(e, ina, last);
        uint ob = 0u;
        inb = false;
        if (two) {
            // The next element is one step along the last dimension unless
            // that wraps (and the slab's axis is not the last).
            if (last + 1u < p.d7 && p.axis != 7u) {
                ob = oa + p.s7;
                inb = ina;
            } else {
                ob = src(e + 1u, inb, last);
            }
        }
        if (!ina && !inb) continue;
        uint old = (ina && (inb || !two)) ? 0u : d[w];
        uint lo16 = ina ? bits16(oa) : (old & 0xFFFFu);
        uint hi16 = two ? (inb ? bits16(ob) : (old >> 16)) : 0u;
        d[w] = lo16 | (hi16 << 16);
    }
}
