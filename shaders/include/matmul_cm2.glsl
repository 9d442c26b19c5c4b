// The epilogue of the VK_NV_cooperative_matrix2 matmuls (matmul_cm2,
// matmul_cm2_wg): coopMatPerElementNV calls cm2_store once per element of
// an accumulator, which applies alpha, beta*C and the bias (matmul.glsl's
// finish), rounds to the output dtype and stores what lies inside the
// output. No shared memory, no barrier: the accumulator goes from the
// registers to memory. Needs the storage16 tier's 16-bit output view (o16)
// and the cooperativeMatrixPerElementOperations feature.
#ifndef VKAMP_MATMUL_CM2_GLSL
#define VKAMP_MATMUL_CM2_GLSL

#extension GL_NV_cooperative_matrix2 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int32 : require

// cm2_store stores element (r, c) of the accumulator whose first element
// is output row row0, column col0 of batch, and returns it unchanged.
float cm2_store(const in uint32_t r, const in uint32_t c, const in float v, const in uint row0, const in uint col0,
                const in uint batch) {
    uint row = row0 + r, col = col0 + c;
    if (row < p.M && col < p.N) {
        float bv = 0.0;
        if ((EPI_FLAGS & FLAG_BIAS) != 0u) {
            uint bdt = FLAG_DT(FLAG_BIAS_DT_SHIFT);
            bv = elem_value(bias[elem_word(col, bdt)], col, bdt);
        }
        uint f = (batch * p.M + row) * p.N + col;
        float x = finish(v, f, bv);
        uint odt = FLAG_DT(FLAG_OUT_DT_SHIFT);
        uint w = odt == DT_BF16 ? f32_to_bf16(x) : odt == DT_F16 ? f32_to_f16(x) : floatBitsToUint(x);
        if (odt != DT_F32) {
            o16[f] = uint16_t(w);
        } else {
            o16[2u * f] = uint16_t(w & 0xFFFFu);
            o16[2u * f + 1u] = uint16_t(w >> 16);
        }
    }
    return v;
}

#endif
