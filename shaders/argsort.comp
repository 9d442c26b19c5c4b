#version 450
// argsort: a stable merge sort of each row of x [rows, cols] by value,
// ascending (or with descending, descending), as (key, column) pairs in
// P and Q, two buffers of 2*n words the runtime passes back and forth:
//   phase 0 writes each element's pair to Q: its order key
//     (order_key.glsl; NaN last ascending, first descending, as PyTorch's
//     sort puts it) and its column: runs of one, sorted;
//   phase 1 merges runs of `width` in P into runs of 2*width in Q: an
//     element of a left run goes to its place in the run plus the count
//     of right-run keys below its own, one of a right run to its place
//     plus the count of left-run keys at or below its own (binary
//     searches), so equal keys keep their column order: stable;
//   phase 2 writes P's columns to y (Int32), the row's order.
// ceil(log2(cols)) merges; every invocation places one element a pass,
// and its searches loop at most 32 times.
#include "common.glsl"
#include "dtype.glsl"
#include "order_key.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform Push { uint n; uint cols; uint width; uint phase; uint descending; } p;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) readonly buffer P { uint pin[]; };
layout(set = 0, binding = 2) writeonly buffer Q { uint qout[]; };
layout(set = 0, binding = 3) writeonly buffer Y { uint y[]; };

DEFINE_ORDER_KEY(x, x, IN0_DT)

// count_below returns how many keys of the sorted run [lo, hi) of P lie
// below key (at or below it with inclusive).
uint count_below(uint lo, uint hi, uint key, bool inclusive) {
    uint a = lo, b = hi;
    while (a < b) {
        uint m = (a + b) >> 1;
        uint km = pin[2u * m];
        if (km < key || (inclusive && km == key)) a = m + 1u;
        else b = m;
    }
    return a - lo;
}

void main() {
    GRID_STRIDE(e, p.n) {
        uint row0 = (e / p.cols) * p.cols, c = e - row0;
        if (p.phase == 0u) {
            uint k = x_key(e);
            // Descending: the numbers' keys reversed onto themselves, NaN
            // below them all.
            if (p.descending != 0u) k = k == KEY_NAN ? 0u : ~k;
            qout[2u * e] = k;
            qout[2u * e + 1u] = c;
            continue;
        }
        if (p.phase == 2u) {
            y[e] = pin[2u * e + 1u];
            continue;
        }
        uint w = p.width;
        uint base = c / (2u * w) * (2u * w); // the pair of runs, within the row
        uint mid = min(base + w, p.cols), end = min(base + 2u * w, p.cols);
        uint key = pin[2u * e];
        uint to;
        if (c < mid) to = c + count_below(row0 + mid, row0 + end, key, false);
        else to = (c - mid) + base + count_below(row0 + base, row0 + mid, key, true);
        qout[2u * (row0 + to)] = key;
        qout[2u * (row0 + to) + 1u] = pin[2u * e + 1u];
    }
}
