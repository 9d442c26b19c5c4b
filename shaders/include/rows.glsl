// Body of a row reduction: y[r] = scale * COMB over i of PRE(x[r*cols + i]),
// for the elements of row r below n (the last row of a whole-tensor first
// pass may be short). The including file defines PRE(v), COMB(a, b) and
// IDENTITY. Input dtype: constant 1; the output is fp32.
#include "reduce.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform RowsPush { uint rows; uint cols; uint n; uint seg; float scale; } p;
#if defined(TEXELS)
// The texel form (rows_tex.glsl): one invocation per row, the same order as
// a segment of one.
#include "rows_tex.glsl"
layout(set = 0, binding = 0) uniform usamplerBuffer x;
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };

DEFINE_TEX_LOADS(x, x, IN0_DT)
DEFINE_TEX_ELEM(x, x, IN0_DT)

void main() {
    GRID_STRIDE(r, p.rows) {
        uint lo = r * p.cols;
        float acc = IDENTITY;
        FOR_ROW(x, lo, min(lo + p.cols, p.n), v, acc = COMB(acc, PRE(v)))
        y[r] = acc * p.scale;
    }
}
#else
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_TREE(tree, COMB)

void main() {
    uint t = gl_LocalInvocationID.x;
    uint per = gl_WorkGroupSize.x / p.seg; // rows per workgroup
    uint lane = t & (p.seg - 1u);
    uint groups = (p.rows + per - 1u) / per;
    // The loop bound is uniform in the workgroup, so barriers stay legal.
    for (uint g = gl_WorkGroupID.x; g < groups; g += gl_NumWorkGroups.x) {
        uint row = g * per + t / p.seg;
        float acc = IDENTITY;
        if (row < p.rows) {
            uint lo = row * p.cols;
            uint hi = min(lo + p.cols, p.n);
            for (uint i = lo + lane; i < hi; i += p.seg) acc = COMB(acc, PRE(det_in(x_at(i))));
        }
        acc = tree(acc, p.seg);
        if (row < p.rows && lane == 0u) y[row] = DETERMINISTIC ? det_mul(acc, p.scale) : acc * p.scale;
    }
}
#endif
