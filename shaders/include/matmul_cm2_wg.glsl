// The body of matmul_cm2_wg and matmul_cm2_wg_bf16, the matmuls of GPUs
// with all of VK_NV_cooperative_matrix2 (NVIDIA's): one workgroup-scope cooperative matrix per BM x BN output tile,
// its A and B tiles loaded straight from memory by tensor-addressed loads
// (coopMatLoadTensorNV) whose clamp mode fills what lies outside the
// operands with zeros, so any shape, transpose and batch works without
// staging or edge code; the driver stages through shared memory itself.
// The epilogue is matmul_cm2.glsl's, element by element. fp16 A and B, or
// bf16 with COOP_BF16 (matmul_cm2_wg_bf16), fp32 accumulators.
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#if defined(COOP_BF16)
#extension GL_EXT_bfloat16 : require
#define MATMUL_ELEM bfloat16_t
#else
#define MATMUL_ELEM float16_t
#endif
#include "common.glsl"
#include "matmul.glsl"
#include "matmul_cm2.glsl"

// Spec constants: 0 the workgroup size, 4 and 5 the transposes, and the
// output tile and k step (multiples of the device's workgroup-scope
// granularity):
layout(constant_id = 10) const uint BM = 128;
layout(constant_id = 11) const uint BN = 128;
layout(constant_id = 12) const uint BK = 32;

#define ACC_T coopmat<float, gl_ScopeWorkgroup, BM, BN, gl_MatrixUseAccumulator>

void main() {
    uint rowBase = gl_WorkGroupID.y * BM, colBase = gl_WorkGroupID.x * BN;
    uint batch = p.batch0 + gl_WorkGroupID.z;
    uint baseA = batch * p.batchA, baseB = batch * p.batchB;
    // A is M x K, stored [M][K] or, transposed, [K][M]; B is K x N, stored
    // [K][N] or [N][K]. A transposed operand is read through a transposing
    // view of its stored layout.
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> la = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> lb = createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    la = setTensorLayoutDimensionNV(la, TRANS_A ? p.K : p.M, TRANS_A ? p.M : p.K);
    lb = setTensorLayoutDimensionNV(lb, TRANS_B ? p.N : p.K, TRANS_B ? p.K : p.N);
    la = setTensorLayoutStrideNV(la, TRANS_A ? p.M : p.K, 1);
    lb = setTensorLayoutStrideNV(lb, TRANS_B ? p.K : p.N, 1);
    tensorViewNV<2, false, 1, 0> transpose = createTensorViewNV(2, false, 1, 0);

    ACC_T acc = ACC_T(0.0);
    [[dont_unroll]] for (uint k = 0; k < p.K; k += BK) {
        coopmat<MATMUL_ELEM, gl_ScopeWorkgroup, BM, BK, gl_MatrixUseA> ma;
        coopmat<MATMUL_ELEM, gl_ScopeWorkgroup, BK, BN, gl_MatrixUseB> mb;
        if (TRANS_A) {
            coopMatLoadTensorNV(ma, ae, baseA, sliceTensorLayoutNV(la, k, BK, rowBase, BM), transpose);
        } else {
            coopMatLoadTensorNV(ma, ae, baseA, sliceTensorLayoutNV(la, rowBase, BM, k, BK));
        }
        if (TRANS_B) {
            coopMatLoadTensorNV(mb, be, baseB, sliceTensorLayoutNV(lb, colBase, BN, k, BK), transpose);
        } else {
            coopMatLoadTensorNV(mb, be, baseB, sliceTensorLayoutNV(lb, k, BK, colBase, BN));
        }
        acc = coopMatMulAdd(ma, mb, acc);
    }
    coopMatPerElementNV(acc, acc, cm2_store, rowBase, colBase, batch);
}
