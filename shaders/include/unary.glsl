// Body of a unary elementwise kernel: dst = OP(a) for n elements, where the
// including file defines OP(a) (it may use p.alpha). Each invocation makes two
// consecutive elements, so an fp16 output word has one writer.
#include "ewise.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform EwisePush { uint n; float alpha; } p;

#if defined(TEXELS)
// The texel form (texels.glsl): a block of 8 elements per invocation.
#include "texels.glsl"
layout(set = 0, binding = 0) uniform usamplerBuffer a;

DEFINE_TEX_LOADS(a, a, IN0_DT)
DEFINE_TEX_OUTPUT(1, D, d, OUT_DT)

void block(uint q, bool full) {
#if defined(OP_HALVES)
    // OP_HALVES(w), where the including file defines it, is OP on the two
    // fp16 elements of word w by their bits, as decoding, OP and encoding
    // would give them: fp16 in and out take no conversion.
    if (full && IN0_DT == DT_F16 && OUT_DT == DT_F16) {
        uvec4 t = texelFetch(a, int(q));
        d[q] = wide2(uvec4(OP_HALVES(t.x), OP_HALVES(t.y), OP_HALVES(t.z), OP_HALVES(t.w)));
        return;
    }
#endif
    vec4 lo, hi;
    a_oct(q, p.n, full, lo, hi);
    d_oct(q, p.n, full, vec4(OP(lo.x), OP(lo.y), OP(lo.z), OP(lo.w)), vec4(OP(hi.x), OP(hi.y), OP(hi.z), OP(hi.w)));
}

TEX_MAIN(block)
#else
layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) writeonly buffer D { uint d[]; };

DEFINE_LOADS(a, a, IN0_DT)
DEFINE_STORE(d, d, OUT_DT)

// fp32 operand and result are read and written four at a time (binary.glsl).
layout(set = 0, binding = 0) readonly buffer A4 { vec4 a4[]; };
layout(set = 0, binding = 1) writeonly buffer D4 { vec4 d4[]; };

void main() {
    if (IN0_DT == DT_F32 && OUT_DT == DT_F32) {
        F32_QUADS(p.n, q) {
            vec4 x = a4[q];
            d4[q] = vec4(OP(x.x), OP(x.y), OP(x.z), OP(x.w));
        }
        F32_TAIL(p.n, i) d[i] = floatBitsToUint(OP(a_at(i)));
        return;
    }
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        vec2 x = a_pair(w, p.n);
        d_pair(w, p.n, vec2(OP(x.x), OP(x.y)));
    }
}
#endif
