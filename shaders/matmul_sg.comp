#version 450
// tiers: packed storage16
// matmul_sg is matmul_reg for CPU drivers, where every buffer load runs lane
// by lane and costs as much as a few hundred FMAs. The S lanes of a subgroup
// share the rows of their tile: each lane loads 1/S of the A block and
// subgroupShuffle hands the values to the others, so A costs S times fewer
// loads. S is the device's subgroup size, given as a spec constant; the
// workgroup is a whole number of subgroups, and subgroups must be full and of
// that size (true of lavapipe and SwiftShader; GPUs that vary their subgroup
// size per shader would need VK_EXT_subgroup_size_control). A subgroup
// computes TM rows of S*TN columns, lane l the TN columns from l*TN.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
#include "common.glsl"
#include "fp16.glsl"
#include "matmul.glsl"

layout(constant_id = 9) const uint S = 8;

// The A block (TM x KK) in slots of two values that are neighbours in
// memory: A(i, kk) and A(i, kk+1), or with TA A(i, kk) and A(i+1, kk), so
// that one fp16 word fills a slot. Lane l holds slots q*S + l.
const uint AS = TM * KK / 2u / S;
float af[AS][2];
uint aoff[AS][2];  // element offsets of the slot's values at k = 0
uint toff[TM / S]; // element offset of row q*S + lane, for the K % KK tail

// aAt is the element offset of A(r, kk) with r clamped into range.
uint aAt(uint r, uint kk, uint base) {
    r = min(r, p.M - 1u);
    return base + (TA ? kk * p.M + r : r * p.K + kk);
}

void setupA(uint r0, uint batch, uint lane) {
    uint base = batch * p.batchA;
    [[unroll]] for (uint q = 0; q < AS; q++) {
        uint w = q * S + lane;
        if (!TA) {
            uint i = w / (KK / 2u), kk = 2u * (w % (KK / 2u));
            aoff[q][0] = aAt(r0 + i, kk, base);
            aoff[q][1] = aoff[q][0] + 1u;
        } else {
            uint kk = w / (TM / 2u), i = 2u * (w % (TM / 2u));
            if (AMODE == MODE_F16X2) { // keep the pair word-aligned
                aoff[q][0] = base + kk * p.M + min(r0 + i, p.M - 2u);
                aoff[q][1] = aoff[q][0] + 1u;
            } else {
                aoff[q][0] = aAt(r0 + i, kk, base);
                aoff[q][1] = aAt(r0 + i + 1u, kk, base);
            }
        }
    }
    [[unroll]] for (uint q = 0; q < TM / S; q++) toff[q] = aAt(r0 + q * S + lane, 0u, base);
}

// aval fetches A(i, kk) of the block from the lane that loaded it.
float aval(uint i, uint kk) {
    uint wn = i * (KK / 2u) + kk / 2u, wt = kk * (TM / 2u) + i / 2u;
    float vn = subgroupShuffle(af[wn / S][kk & 1u], wn % S);
    float vt = subgroupShuffle(af[wt / S][i & 1u], wt % S);
    return TA ? vt : vn;
}

void main() {
    uint lane = gl_SubgroupInvocationID;
    uint r0 = (gl_WorkGroupID.y * (gl_WorkGroupSize.x / S) + gl_SubgroupID) * TM;
    uint c0 = gl_WorkGroupID.x * (S * TN) + lane * TN;
    uint batch = p.batch0 + gl_WorkGroupID.z;
    if (r0 >= p.M) return; // the whole subgroup: its rows are all past the end
    clearAcc();
    setupA(r0, batch, lane);
    setupB(c0, batch);

    uint k = 0;
    for (; k + KK <= p.K; k += KK) {
        uint kstep = TA ? k * p.M : k;
        [[unroll]] for (uint q = 0; q < AS; q++) {
            if (AMODE == MODE_F16X2) {
                vec2 h = loadA2(aoff[q][0] + kstep);
                af[q][0] = h.x;
                af[q][1] = h.y;
            } else {
                af[q][0] = loadA1(aoff[q][0] + kstep);
                af[q][1] = loadA1(aoff[q][1] + kstep);
            }
        }
        loadB(k);
        [[unroll]] for (uint i = 0; i < TM; i++) {
            float av[KK];
            [[unroll]] for (uint kk = 0; kk < KK; kk++) av[kk] = aval(i, kk);
            fmaRow(i, av);
        }
    }
    for (; k < p.K; k++) { // the last K % KK steps, one at a time
        [[unroll]] for (uint j = 0; j < TN; j++) bv[0][j] = loadB1(bElem(j, k));
        float t[TM / S];
        [[unroll]] for (uint q = 0; q < TM / S; q++) t[q] = loadA1(toff[q] + (TA ? k * p.M : k));
        [[unroll]] for (uint i = 0; i < TM; i++) {
            float x = subgroupShuffle(t[i / S], i % S);
            [[unroll]] for (uint j = 0; j < TN; j++) acc[i][j] = fma(x, bv[0][j], acc[i][j]);
        }
    }
    storeTile(r0, c0, batch);
}
