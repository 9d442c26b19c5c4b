// Body of argmax and argmin over a middle axis, x viewed as [outer, k,
// inner]: y[o, i] is the j of the largest (with ARG_MIN, smallest) x[o, j,
// i], as PyTorch's argmax and argmin: the first j among equal values, NaN
// beyond every number (the first NaN's j), -0 equal to +0. Values compare
// as integer keys of their bits (order_key.glsl), never as floats: the same j on every
// driver, subnormals included (SwiftShader compares them as zero).
//
// A long axis takes two dispatches so that no invocation loops past
// lavapipe's limit (tensor/loops.go): phase 0 reduces each chunk of `chunk`
// elements of a line to a (key, j) pair in P, and phase 1 reduces a line's
// pairs in chunk order (a later chunk wins only with a larger key). A
// short axis is phase 1 over x itself, chunk == k. y is Int32: one word per
// output, one writer.
#include "common.glsl"
#include "dtype.glsl"
#include "order_key.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform ArgPush { uint outer; uint k; uint inner; uint chunk; uint phase; } p;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) buffer P { uint part[]; }; // phase 0 writes it, phase 1 reads it
layout(set = 0, binding = 2) writeonly buffer Y { uint y[]; };

DEFINE_ORDER_KEY(x, x, IN0_DT)

// key is element i's rank: larger is better (for ARG_MIN, smaller values
// rank higher), NaN highest of all, no number 0.
uint key(uint i) {
    uint k = x_key(i);
#ifdef ARG_MIN
    // ~ reverses the numbers' keys, [0x007FFFFF, 0xFF800000], onto themselves
    if (k != KEY_NAN) k = ~k;
#endif
    return k;
}

// best reduces x[o, j0:j1, i] to its best key and that key's first j.
void best(uint o, uint i, uint j0, uint j1, out uint bk, out uint bj) {
    bk = 0u;
    bj = j0;
    uint e = (o * p.k + j0) * p.inner + i;
    for (uint j = j0; j < j1; j++, e += p.inner) {
        uint kk = key(e);
        if (kk > bk) {
            bk = kk;
            bj = j;
        }
    }
}

void main() {
    uint nc = (p.k + p.chunk - 1u) / p.chunk;
    if (p.phase == 0u) {
        // Slot s = (o*nc + c)*inner + i: neighbouring invocations read
        // neighbouring words when inner > 1.
        GRID_STRIDE(s, p.outer * nc * p.inner) {
            uint oc = s / p.inner, i = s - oc * p.inner;
            uint o = oc / nc, c = oc - o * nc;
            uint bk, bj;
            best(o, i, c * p.chunk, min(p.k, (c + 1u) * p.chunk), bk, bj);
            part[2u * s] = bk;
            part[2u * s + 1u] = bj;
        }
        return;
    }
    GRID_STRIDE(r, p.outer * p.inner) {
        uint o = r / p.inner, i = r - o * p.inner;
        uint bk = 0u, bj = 0u;
        if (nc == 1u) {
            best(o, i, 0u, p.k, bk, bj);
        } else {
            for (uint c = 0u; c < nc; c++) {
                uint s = (o * nc + c) * p.inner + i;
                if (part[2u * s] > bk) {
                    bk = part[2u * s];
                    bj = part[2u * s + 1u];
                }
            }
        }
        y[r] = bj;
    }
}
