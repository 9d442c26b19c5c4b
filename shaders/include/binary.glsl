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

void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        vec2 x = a_pair(w, p.n);
        vec2 y = b_pair(w, p.n);
        d_pair(w, p.n, vec2(OP(x.x, y.x), OP(x.y, y.y)));
    }
}
#endif
