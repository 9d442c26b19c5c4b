#version 450
// tiers: packed storage16
// matmul_shared is the matmul for GPUs: the workgroup stages BM x BK of A and
// BK x BN of B in shared memory (decoded to fp32 once), then each invocation
// accumulates a TM x TN register tile from it. WG = (BM/TM) * (BN/TN).
// Elements past the edge are staged as zeros: past K both operands are zero,
// so valid outputs only ever add 0*0; zero rows and columns only feed outputs
// that are not stored.
#include "common.glsl"
#include "fp16.glsl"
#include "matmul.glsl"

layout(constant_id = 10) const uint BM = 64;
layout(constant_id = 11) const uint BN = 64;
layout(constant_id = 12) const uint BK = 16;

shared float sa[BK * BM]; // [kk][i]
shared float sb[BK * BN]; // [kk][j]

void main() {
    uint lid = gl_LocalInvocationID.x;
    uint wg = gl_WorkGroupSize.x;
    uint tx = lid % (BN / TN), ty = lid / (BN / TN);
    uint rowBase = gl_WorkGroupID.y * BM, colBase = gl_WorkGroupID.x * BN;
    uint batch = p.batch0 + gl_WorkGroupID.z;
    uint baseA = batch * p.batchA, baseB = batch * p.batchB;
    clearAcc();
    for (uint k0 = 0; k0 < p.K; k0 += BK) {
        // Consecutive invocations read consecutive addresses of each operand.
        for (uint e = lid; e < BM * BK; e += wg) {
            uint i = TA ? e % BM : e / BK;
            uint kk = TA ? e / BM : e % BK;
            uint r = rowBase + i, k = k0 + kk;
            float v = 0.0;
            if (r < p.M && k < p.K) v = loadA1(baseA + (TA ? k * p.M + r : r * p.K + k));
            sa[kk * BM + i] = v;
        }
        for (uint e = lid; e < BK * BN; e += wg) {
            uint j = TB ? e / BK : e % BN;
            uint kk = TB ? e % BK : e / BN;
            uint c = colBase + j, k = k0 + kk;
            float v = 0.0;
            if (c < p.N && k < p.K) v = loadB1(baseB + (TB ? c * p.K + k : k * p.N + c));
            sb[kk * BN + j] = v;
        }
        barrier();
        [[unroll]] for (uint kk = 0; kk < BK; kk++) {
            float av[TM], bw[TN];
            [[unroll]] for (uint i = 0; i < TM; i++) av[i] = sa[kk * BM + ty * TM + i];
            [[unroll]] for (uint j = 0; j < TN; j++) bw[j] = sb[kk * BN + tx * TN + j];
            [[unroll]] for (uint i = 0; i < TM; i++) {
                [[unroll]] for (uint j = 0; j < TN; j++) acc[i][j] = fma(av[i], bw[j], acc[i][j]);
            }
        }
        barrier();
    }
    storeTile(rowBase + ty * TM, colBase + tx * TN, batch);
}
