#version 450
// cumsum: the inclusive prefix sums of x over a middle axis, x viewed as
// [outer, k, inner]: y[o, j, i] = x[o, 0, i] + ... + x[o, j, i], added in
// fp32 in that order (det_add in deterministic mode) from -0, so that a
// line of -0 sums to -0 as PyTorch's does. y is fp32 (the runtime casts it
// to a 16-bit out: one rounding either way).
//
// With reverse, the sums run the other way, from the end of the axis
// (y[o, j, i] = x[o, j, i] + ... + x[o, k-1, i], the gradient of a
// cumsum): the lines are read through a mirrored position t -> k-1-t, and
// everything below is in that order.
//
// A long axis takes two dispatches so that no invocation loops past
// lavapipe's limit (tensor/loops.go): phase 0 sums each chunk of `chunk`
// elements of a line into P, and phase 1 starts each chunk from the sum of
// the chunks before it, added in chunk order. The order of every add
// depends on k and chunk alone (the runtime's constant), never on the
// device. A short axis is phase 1 alone, chunk == k.
#include "common.glsl"
#include "dtype.glsl"
#include "det.glsl"
#include "ewise.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform CumsumPush { uint outer; uint k; uint inner; uint chunk; uint phase; uint reverse; } p;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) buffer P { float part[]; }; // phase 0 writes it, phase 1 reads it
layout(set = 0, binding = 2) writeonly buffer Y { float y[]; };

DEFINE_LOADS(x, x, IN0_DT)

float add(float a, float b) { return DETERMINISTIC ? det_add(a, b) : a + b; }

// pos is the element at position t of line (o, i), in the sums' order.
uint pos(uint o, uint t, uint i) { return (o * p.k + (p.reverse != 0u ? p.k - 1u - t : t)) * p.inner + i; }

void main() {
    uint nc = (p.k + p.chunk - 1u) / p.chunk;
    // Slot s = (o*nc + c)*inner + i, chunk c of line (o, i).
    GRID_STRIDE(s, p.outer * nc * p.inner) {
        uint oc = s / p.inner, i = s - oc * p.inner;
        uint o = oc / nc, c = oc - o * nc;
        uint t0 = c * p.chunk, t1 = min(p.k, t0 + p.chunk);
        float acc = uintBitsToFloat(0x80000000u); // -0: x + -0 is x, -0 included
        if (p.phase == 0u) {
            for (uint t = t0; t < t1; t++) acc = add(acc, x_at(pos(o, t, i)));
            part[s] = acc;
            continue;
        }
        for (uint b = 0u; b < c; b++) acc = add(acc, part[(o * nc + b) * p.inner + i]);
        for (uint t = t0; t < t1; t++) {
            uint e = pos(o, t, i);
            acc = add(acc, x_at(e));
            y[e] = acc;
        }
    }
}
