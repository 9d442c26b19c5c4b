// Body of a binary elementwise kernel: dst = OP(a, b) for n elements of two
// same-shaped inputs, where the including file defines OP(a, b) (it may use
// p.alpha). Each invocation makes two consecutive elements, so an fp16 output
// word has one writer.
#include "ewise.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 2) const uint IN1_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(push_constant) uniform EwisePush { uint n; float alpha; } p;

#if defined(TEXELS)
// The texel form (texels.glsl): a block of 8 elements per invocation.
#include "texels.glsl"
layout(set = 0, binding = 0) uniform usamplerBuffer a;
layout(set = 0, binding = 1) uniform usamplerBuffer b;

DEFINE_TEX_LOADS(a, a, IN0_DT)
DEFINE_TEX_LOADS(b, b, IN1_DT)
DEFINE_TEX_OUTPUT(2, D, d, OUT_DT)

void block(uint q, bool full) {
#if defined(OP_HALVES2)
    // OP_HALVES2(wa, wb), where the including file defines it, is OP on the
    // two fp16 elements of words wa and wb by their bits (unary.glsl's
    // OP_HALVES): fp16 in and out take no conversion.
    if (full && IN0_DT == DT_F16 && IN1_DT == DT_F16 && OUT_DT == DT_F16) {
        uvec4 s = texelFetch(a, int(q)), t = texelFetch(b, int(q));
        d[q] = wide2(uvec4(OP_HALVES2(s.x, t.x), OP_HALVES2(s.y, t.y), OP_HALVES2(s.z, t.z), OP_HALVES2(s.w, t.w)));
        return;
    }
#endif
    vec4 alo, ahi, blo, bhi;
    a_oct(q, p.n, full, alo, ahi);
    b_oct(q, p.n, full, blo, bhi);
    d_oct(q, p.n, full, vec4(OP(alo.x, blo.x), OP(alo.y, blo.y), OP(alo.z, blo.z), OP(alo.w, blo.w)),
          vec4(OP(ahi.x, bhi.x), OP(ahi.y, bhi.y), OP(ahi.z, bhi.z), OP(ahi.w, bhi.w)));
}

TEX_MAIN(block)
#else
layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) readonly buffer B { uint b[]; };
layout(set = 0, binding = 2) writeonly buffer D { uint d[]; };

DEFINE_LOADS(a, a, IN0_DT)
DEFINE_LOADS(b, b, IN1_DT)
DEFINE_STORE(d, d, OUT_DT)

// With fp32 operands and result, each invocation makes four elements at a
// time, read and written as vec4s (ewise.glsl's F32_QUADS): SwiftShader
// loads and stores a vec4 in about the time of a word, and runs every
// branch of the dtype code below whatever the dtypes (masked: it does not
// fold its specialization constants), so the loop has none. With the grid
// capped on CPU drivers (tensor's ewiseGrid), stream/add-f32 on SwiftShader
// went from 0.28-0.30 to 2.3-5.6 GB/s by run (4194304 elements,
// tools/bench, 2 cores).
layout(set = 0, binding = 0) readonly buffer A4 { vec4 a4[]; };
layout(set = 0, binding = 1) readonly buffer B4 { vec4 b4[]; };
layout(set = 0, binding = 2) writeonly buffer D4 { vec4 d4[]; };

void main() {
    if (IN0_DT == DT_F32 && IN1_DT == DT_F32 && OUT_DT == DT_F32) {
        F32_QUADS(p.n, q) {
            vec4 x = a4[q], y = b4[q];
            d4[q] = vec4(OP(x.x, y.x), OP(x.y, y.y), OP(x.z, y.z), OP(x.w, y.w));
        }
        F32_TAIL(p.n, i) d[i] = floatBitsToUint(OP(a_at(i), b_at(i)));
        return;
    }
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        vec2 x = a_pair(w, p.n);
        vec2 y = b_pair(w, p.n);
        d_pair(w, p.n, vec2(OP(x.x, y.x), OP(x.y, y.y)));
    }
}
#endif
