// Body of a row-wise softmax backward over the last axis, a segment of the
// workgroup per row, from the forward's output y and the upstream gradient
// dy (any float dtypes, constants 1 and 2): the row sum s of TERM(y, dy),
// then the fp32 gradient OUT(y, dy, s), both defined by the including file,
// with DET_TERM and DET_OUT their deterministic forms (det.glsl's operations;
// the runtime fixes the segment and workgroup, hence the tree).
#include "reduce.glsl"
#include "det.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 2) const uint IN1_DT = DT_F32;

layout(push_constant) uniform SoftmaxPush { uint rows; uint cols; uint seg; } p;
#if defined(TEXELS)
// The texel form (rows_tex.glsl): one invocation per row, the same order as
// a segment of one; not on the deterministic path.
#include "rows_tex.glsl"
layout(set = 0, binding = 0) uniform usamplerBuffer y;
layout(set = 0, binding = 1) uniform usamplerBuffer dy;

DEFINE_TEX_LOADS(y, y, IN0_DT)
DEFINE_TEX_ELEM(y, y, IN0_DT)
DEFINE_TEX_LOADS(dy, dy, IN1_DT)
DEFINE_TEX_ELEM(dy, dy, IN1_DT)
DEFINE_TEX_OUTPUT(2, Dx, dx, DT_F32)

void main() {
    GRID_STRIDE(r, p.rows) {
        uint lo = r * p.cols, hi = lo + p.cols;
        float s = 0.0;
        FOR_ROW2(y, dy, lo, hi, v, g, s += TERM(v, g))
        ROW_SPAN(lo, hi)
        for (uint i = lo; i < hm_; i++) dx_words[i] = floatBitsToUint(OUT(y_elem(i), dy_elem(i), s));
        for (uint q = q0_; q < q1_; q++) {
            vec4 a, b, c, d;
            y_oct(q, 0u, true, a, b);
            dy_oct(q, 0u, true, c, d);
            dx_oct(q, 0u, true, vec4(OUT(a.x, c.x, s), OUT(a.y, c.y, s), OUT(a.z, c.z, s), OUT(a.w, c.w, s)),
                   vec4(OUT(b.x, d.x, s), OUT(b.y, d.y, s), OUT(b.z, d.z, s), OUT(b.w, d.w, s)));
        }
        for (uint i = ts_; i < hi; i++) dx_words[i] = floatBitsToUint(OUT(y_elem(i), dy_elem(i), s));
    }
}
#else
layout(set = 0, binding = 0) readonly buffer Y { uint y[]; };
layout(set = 0, binding = 1) readonly buffer Dy { uint dy[]; };
layout(set = 0, binding = 2) writeonly buffer Dx { float dx[]; };

DEFINE_LOADS(y, y, IN0_DT)
DEFINE_LOADS(dy, dy, IN1_DT)
DEFINE_TREE(tree_sum, ADD)
DEFINE_TREE(det_tree_sum, det_add)

void main() {
    uint t = gl_LocalInvocationID.x;
    uint per = gl_WorkGroupSize.x / p.seg;
    uint lane = t & (p.seg - 1u);
    uint groups = (p.rows + per - 1u) / per;
    for (uint g = gl_WorkGroupID.x; g < groups; g += gl_NumWorkGroups.x) {
        uint row = g * per + t / p.seg;
        bool ok = row < p.rows;
        uint lo = row * p.cols;
        float s = 0.0;
        if (DETERMINISTIC) {
            if (ok) for (uint i = lane; i < p.cols; i += p.seg) s = det_add(s, DET_TERM(y_at(lo + i), dy_at(lo + i)));
            s = det_tree_sum(s, p.seg);
            if (ok) for (uint i = lane; i < p.cols; i += p.seg) dx[lo + i] = DET_OUT(y_at(lo + i), dy_at(lo + i), s);
            continue;
        }
        if (ok) for (uint i = lane; i < p.cols; i += p.seg) s += TERM(y_at(lo + i), dy_at(lo + i));
        s = tree_sum(s, p.seg);
        if (ok) for (uint i = lane; i < p.cols; i += p.seg) dx[lo + i] = OUT(y_at(lo + i), dy_at(lo + i), s);
    }
}
#endif
