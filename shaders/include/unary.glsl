// Body of a unary elementwise kernel: dst = OP(a) for n elements, where the
// including file defines OP(a) (it may use p.alpha). Each invocation makes two
// consecutive elements, so an fp16 output word has one writer.
#include "ewise.glsl"

layout(push_constant) uniform Push { uint n; float alpha; } p;
layout(set = 0, binding = 0) readonly buffer A { uint a[]; };
layout(set = 0, binding = 1) writeonly buffer D { uint d[]; };

DEFINE_LOADS(a, a, IN0_F16)
DEFINE_STORE(d, d, OUT_F16)

void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        vec2 x = a_pair(w, p.n);
        d_pair(w, p.n, vec2(OP(x.x), OP(x.y)));
    }
}
