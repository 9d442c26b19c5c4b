#version 450
// tiers: packed storage16
// matmul_reg is the portable matmul: register blocking only, no shared memory
// and no subgroup operations. Each invocation computes a TM x TN tile, the
// WGX x (WG/WGX) invocations of a workgroup sit side by side. Rows and columns
// past the edge are clamped, not padded: they are computed and dropped, so
// the k loop has no bounds checks and no zeros that could hide an inf or NaN.
#include "common.glsl"
#include "fp16.glsl"
#include "matmul.glsl"

layout(constant_id = 8) const uint WGX = 8;

uint aoff[TM]; // element offset of A(r0+i, 0); for pairs along m, of the pair

void setupA(uint r0, uint batch) {
    uint base = batch * p.batchA;
    [[unroll]] for (uint i = 0; i < TM; i++) {
        if (TA && AMODE == MODE_F16X2) {
            aoff[i] = base + min(r0 + (i & ~1u), p.M - 2u);
        } else {
            uint r = min(r0 + i, p.M - 1u);
            aoff[i] = base + (TA ? r : r * p.K);
        }
    }
}

uint aElem(uint i, uint k) {
    if (!TA) return aoff[i] + k;
    if (AMODE == MODE_F16X2) return aoff[i & ~1u] + (i & 1u) + k * p.M;
    return aoff[i] + k * p.M;
}

void main() {
    uint wgy = gl_WorkGroupSize.x / WGX;
    uint lid = gl_LocalInvocationID.x;
    uint r0 = (gl_WorkGroupID.y * wgy + lid / WGX) * TM;
    uint c0 = (gl_WorkGroupID.x * WGX + lid % WGX) * TN;
    uint batch = p.batch0 + gl_WorkGroupID.z;
    if (r0 >= p.M || c0 >= p.N) return;
    clearAcc();
    setupA(r0, batch);
    setupB(c0, batch);

    uint k = 0;
    for (; k + KK <= p.K; k += KK) {
        loadB(k);
        float ab[TM][KK]; // A(r0+i, k+kk)
        if (TA && AMODE == MODE_F16X2) { // a word holds rows i and i+1
            [[unroll]] for (uint i = 0; i < TM; i += 2) {
                [[unroll]] for (uint kk = 0; kk < KK; kk++) {
                    vec2 h = loadA2(aoff[i] + (k + kk) * p.M);
                    ab[i][kk] = h.x;
                    ab[i + 1u][kk] = h.y;
                }
            }
        } else if (AMODE == MODE_F16X2) { // a word holds k+kk and k+kk+1
            [[unroll]] for (uint i = 0; i < TM; i++) {
                [[unroll]] for (uint kk = 0; kk < KK; kk += 2) {
                    vec2 h = loadA2(aoff[i] + k + kk);
                    ab[i][kk] = h.x;
                    ab[i][kk + 1u] = h.y;
                }
            }
        } else {
            [[unroll]] for (uint i = 0; i < TM; i++) {
                [[unroll]] for (uint kk = 0; kk < KK; kk++) ab[i][kk] = loadA1(aElem(i, k + kk));
            }
        }
        [[unroll]] for (uint i = 0; i < TM; i++) fmaRow(i, ab[i]);
    }
    for (; k < p.K; k++) { // the last K % KK steps, one at a time
        [[unroll]] for (uint j = 0; j < TN; j++) bv[0][j] = loadB1(bElem(j, k));
        [[unroll]] for (uint i = 0; i < TM; i++) {
            float x = loadA1(aElem(i, k));
            [[unroll]] for (uint j = 0; j < TN; j++) acc[i][j] = DETERMINISTIC ? det_mad(x, bv[0][j], acc[i][j]) : fma(x, bv[0][j], acc[i][j]);
        }
    }
    storeTile(r0, c0, batch);
}
