// Body of a row-wise softmax over the last axis, a segment of the workgroup
// per row: the row max, then the sum of exp(x - max), then the output
// OUT(x - max, sum) defined by the including file. NaN anywhere in a row, or
// +inf, makes the row NaN, as the float64 formula does.
#include "reduce.glsl"
#include "det.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;

layout(push_constant) uniform SoftmaxPush { uint rows; uint cols; uint seg; } p;
#if defined(TEXELS)
#include "rows_tex.glsl"
layout(set = 0, binding = 0) uniform usamplerBuffer x;

DEFINE_TEX_LOADS(x, x, IN0_DT)
DEFINE_TEX_ELEM(x, x, IN0_DT)
DEFINE_TEX_OUTPUT(1, Y, y, DT_F32)
#else
layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_TREE(tree_max, nan_max)
DEFINE_TREE(tree_sum, ADD)
#endif

// exp_ and log_ spell out -inf -> 0 and NaN -> NaN: driver exp and log need
// not handle them (SwiftShader's log(NaN) is finite).
float exp_(float d) {
    if (is_nan(d)) return d;
    if (is_inf(d)) return d > 0.0 ? d : 0.0;
    return DETERMINISTIC ? det_exp(d) : exp(d);
}

float log_(float s) { return is_nan(s) ? s : DETERMINISTIC ? det_log(s) : log(s); }

// sub_ is a - b, with a subnormal difference flushed on the deterministic path.
float sub_(float a, float b) { return DETERMINISTIC ? det_sub(a, b) : a - b; }

#if defined(TEXELS)
// The texel form (rows_tex.glsl): one invocation per row, the same order as
// a segment of one.
float out_(float v, float m, float s) { return OUT(sub_(v, m), s); }

// row_max is nan_max over the row in order: its first NaN, else its first
// greatest value. It keeps the greatest magnitude's bits beside the max, a
// comparison where nan_max makes four and a NaN sweep only for a row with a
// NaN (tools/bench stream/softmax-f32, lavapipe: the max took 20% of the
// time).
float row_max(uint lo, uint hi) {
    float m = NEG_INF;
    uint a = 0u;
    FOR_ROW(x, lo, hi, v, { m = v > m ? v : m; a = max(a, floatBitsToUint(v) & 0x7FFFFFFFu); })
    if (a > 0x7F800000u) FOR_ROW(x, lo, hi, v, if (is_nan(v)) return v;)
    return m;
}

void main() {
    GRID_STRIDE(r, p.rows) {
        uint lo = r * p.cols, hi = lo + p.cols;
        float m = row_max(lo, hi);
        float s = 0.0;
        ROW_SPAN(lo, hi)
        FOR_ROW(x, lo, hi, v, s += exp_(sub_(v, m)))
        for (uint i = lo; i < hm_; i++) y_words[i] = floatBitsToUint(out_(x_elem(i), m, s));
        for (uint q = q0_; q < q1_; q++) {
            vec4 a, b;
            x_oct(q, 0u, true, a, b);
            y_oct(q, 0u, true, vec4(out_(a.x, m, s), out_(a.y, m, s), out_(a.z, m, s), out_(a.w, m, s)),
                  vec4(out_(b.x, m, s), out_(b.y, m, s), out_(b.z, m, s), out_(b.w, m, s)));
        }
        for (uint i = ts_; i < hi; i++) y_words[i] = floatBitsToUint(out_(x_elem(i), m, s));
    }
}
#else
void main() {
    uint t = gl_LocalInvocationID.x;
    uint per = gl_WorkGroupSize.x / p.seg;
    uint lane = t & (p.seg - 1u);
    uint groups = (p.rows + per - 1u) / per;
    for (uint g = gl_WorkGroupID.x; g < groups; g += gl_NumWorkGroups.x) {
        uint row = g * per + t / p.seg;
        bool ok = row < p.rows;
        uint lo = row * p.cols;
        float m = NEG_INF;
        if (ok) for (uint i = lane; i < p.cols; i += p.seg) m = nan_max(m, x_at(lo + i));
        m = tree_max(m, p.seg);
        float s = 0.0;
        if (ok) for (uint i = lane; i < p.cols; i += p.seg) s += exp_(sub_(x_at(lo + i), m));
        s = tree_sum(s, p.seg);
        if (ok) for (uint i = lane; i < p.cols; i += p.seg) y[lo + i] = OUT(sub_(x_at(lo + i), m), s);
    }
}
#endif
