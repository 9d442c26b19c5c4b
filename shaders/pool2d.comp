#version 450
// pool2d: 2-D max, average or adaptive average pooling of x [planes, H, W]
// into d [planes, Ho, Wo], over PyTorch's windows (see pool.glsl), in fp32,
// rounded once to OUT_DT. Max propagates NaN, as PyTorch, and writes the
// argmax (h*W + w within the plane, the first maximum in row-major order)
// to idx as int32; a window of only -inf gives its first element. Average
// divides by kH*kW (count_include_pad), adaptive by the window's size. Each
// invocation makes two consecutive elements, so a 16-bit word has one
// writer.
#include "ewise.glsl"
#include "pool.glsl"
#include "det_extra.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(set = 0, binding = 0) readonly buffer X { uint x[]; };
layout(set = 0, binding = 1) writeonly buffer D { uint d[]; };
layout(set = 0, binding = 2) writeonly buffer Idx { uint idx[]; };

DEFINE_LOADS(x, x, IN0_DT)
DEFINE_STORE(d, d, OUT_DT)

float elem(uint e) {
    uvec3 at_ = plane_pixel(e, p.ho, p.wo);
    uint plane = at_.x, oh = at_.y, ow = at_.z;
    ivec2 hr = window(oh, p.h, p.ho, p.kh, p.sh, p.ph);
    ivec2 wr = window(ow, p.w, p.wo, p.kw, p.sw, p.pw);
    uint base = plane * p.h * p.w;
    if (MODE == POOL_MAX) {
        float m = uintBitsToFloat(0xFF800000u); // -inf
        int km = order_key(m);
        uint at = uint(hr.x) * p.w + uint(wr.x);
        for (int i = hr.x; i < hr.y; i++) {
            for (int j = wr.x; j < wr.y; j++) {
                uint q = uint(i) * p.w + uint(j);
                float v = x_at(base + q);
                if (DETERMINISTIC) v = det_ftz(v); // SwiftShader compares subnormals as zero
                int kv = order_key(v);
                if (kv > km || is_nan(v)) {
                    m = v;
                    km = kv;
                    at = q;
                    if (is_nan(v)) { i = hr.y; break; }
                }
            }
        }
        idx[e] = at;
        return m;
    }
    float sum = 0.0;
    for (int i = hr.x; i < hr.y; i++) {
        for (int j = wr.x; j < wr.y; j++) sum = xadd(sum, x_at(base + uint(i) * p.w + uint(j)));
    }
    float count = MODE == POOL_AVG ? float(p.kh * p.kw) : float((hr.y - hr.x) * (wr.y - wr.x));
    return xdiv(sum, count);
}

void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        uint e = 2u * w;
        d_pair(w, p.n, vec2(elem(e), e + 1u < p.n ? elem(e + 1u) : 0.0));
    }
}
