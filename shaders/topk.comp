#version 450
// topk: the indices of the k largest elements of each row of x [rows,
// cols], largest first: y[r, q] is the column of row r's q-th largest
// element, NaN above every number, equal values in column order (PyTorch
// leaves their order unspecified), -0 equal to +0. Values compare as
// integer keys of their bits (order_key.glsl): the same indices on every
// driver. The runtime gathers the values by these indices.
//
// One workgroup a row, k passes: pass q finds the best element that ranks
// after pass q-1's, each invocation over a strided part of the row and
// then a tree in shared memory; ranks are (key descending, column
// ascending), so every pass has one answer. k * cols reads a row, no
// sorting: for the small k of sampling and accuracy, where the passes
// over a row in cache cost less than a sort's barriers.
#include "common.glsl"
#include "dtype.glsl"
#include "order_key.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform Push { uint rows; uint cols; uint k; } p;
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { uint y[]; };

DEFINE_ORDER_KEY(x, x, IN0_DT)

// The largest workgroup the runtime uses for trees (a power of two).
#define MAX_WG 1024u
shared uint sk[MAX_WG];
shared uint sj[MAX_WG];

// ranks_before says whether (ka, ja) ranks before (kb, jb).
bool ranks_before(uint ka, uint ja, uint kb, uint jb) { return ka > kb || (ka == kb && ja < jb); }

void main() {
    uint lid = gl_LocalInvocationID.x, wg = gl_WorkGroupSize.x;
    // The loop bounds are uniform in the workgroup, so barriers stay legal.
    for (uint r = gl_WorkGroupID.x; r < p.rows; r += gl_NumWorkGroups.x) {
        uint base = r * p.cols;
        uint tk = 0u, tj = 0u; // the last pass's answer
        for (uint q = 0u; q < p.k; q++) {
            // No key is 0, and no column 0xFFFFFFFF: (0, ~0) ranks last.
            uint bk = 0u, bj = 0xFFFFFFFFu;
            for (uint j = lid; j < p.cols; j += wg) {
                uint kk = x_key(base + j);
                if ((q == 0u || ranks_before(tk, tj, kk, j)) && ranks_before(kk, j, bk, bj)) {
                    bk = kk;
                    bj = j;
                }
            }
            sk[lid] = bk;
            sj[lid] = bj;
            barrier();
            for (uint s = wg >> 1; s > 0u; s >>= 1) {
                if (lid < s && ranks_before(sk[lid + s], sj[lid + s], sk[lid], sj[lid])) {
                    sk[lid] = sk[lid + s];
                    sj[lid] = sj[lid + s];
                }
                barrier();
            }
            tk = sk[0];
            tj = sj[0];
            if (lid == 0u) y[r * p.k + q] = tj;
            barrier(); // sk and sj are reused by the next pass
        }
    }
}
