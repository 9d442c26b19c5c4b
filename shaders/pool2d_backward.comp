#version 450
// pool2d_backward is the gradient of pool2d in gather form: each element
// (plane, h, w) of d [planes, H, W] sums, in a fixed order (no atomics),
// the upstream gradients dy [planes, Ho, Wo] of the windows that contain
// it: those whose argmax (idx, int32) is it for max pooling, each divided
// by kH*kW for average and by the window's size for adaptive average. Sums
// run in fp32 and are rounded once to OUT_DT. Each invocation makes two
// consecutive elements, so a 16-bit word has one writer.
// Its texel form reads dy and idx as texels (rows_tex.glsl's elements),
// which CPU drivers gather in SIMD where they load storage buffers lane by
// lane.
// texel form
#include "ewise.glsl"
#include "pool.glsl"
#include "det_extra.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;
// DISJOINT: max or average pooling whose windows do not overlap (stride >=
// kernel on both axes, as MaxPool2d(2)): a pixel is in one window at most.
layout(constant_id = 5) const bool DISJOINT = false;

#if defined(TEXELS)
#include "rows_tex.glsl"
layout(set = 0, binding = 0) uniform usamplerBuffer dy;
layout(set = 0, binding = 1) uniform usamplerBuffer idx;

DEFINE_TEX_ELEM(dy, dy, IN0_DT)
float dy_at(uint o) { return dy_elem(o); }
uint idx_at(uint o) { return texelFetch(idx, int(o >> 2))[o & 3u]; }
#else
layout(set = 0, binding = 0) readonly buffer Dy { uint dy[]; };
layout(set = 0, binding = 1) readonly buffer Idx { uint idx[]; };

DEFINE_LOADS(dy, dy, IN0_DT)
uint idx_at(uint o) { return idx[o]; }
#endif
layout(set = 0, binding = 2) writeonly buffer D { uint d[]; };

DEFINE_STORE(d, d, OUT_DT)

// outputs returns the output indices [first, last] along an axis whose
// windows contain input index i.
ivec2 outputs(int i, uint in_len, uint out_len, int k, int s, int pad, uint sm, uint ss) {
    if (MODE == POOL_ADAPTIVE) {
        // start(o) <= i < end(o): o from floor(i*out/in) to ceil((i+1)*out/in) - 1.
        int lo = int((uint(i) * out_len) / in_len);
        int hi = int(((uint(i) + 1u) * out_len + in_len - 1u) / in_len) - 1;
        return ivec2(lo, min(hi, int(out_len) - 1));
    }
    // o*s - pad <= i < o*s - pad + k
    int t = i + pad - k + 1;
    int lo = t <= 0 ? 0 : int(div_by(uint(t + s - 1), sm, ss));
    int hi = min(int(div_by(uint(i + pad), sm, ss)), int(out_len) - 1);
    return ivec2(lo, hi);
}

float elem(uint e) {
    uvec3 at_ = plane_pixel(e, p.h, p.w);
    uint plane = at_.x, hi = at_.y, wi = at_.z;
    ivec2 hr = outputs(int(hi), p.h, p.ho, p.kh, p.sh, p.ph, p.shM, p.shS);
    ivec2 wr = outputs(int(wi), p.w, p.wo, p.kw, p.sw, p.pw, p.swM, p.swS);
    uint me = hi * p.w + wi;
    float sum = 0.0;
    if (DISJOINT && MODE != POOL_ADAPTIVE) {
        // The one window: the last that starts at or before the pixel
        // (outputs' hr.y, wr.y), if it reaches it (hr.x <= hr.y). No loop.
        int oh = hr.y, ow = wr.y;
        bool in_ = hr.x <= oh && wr.x <= ow;
        uint o = in_ ? (plane * p.ho + uint(oh)) * p.wo + uint(ow) : 0u;
        float g = dy_at(o);
        if (MODE == POOL_MAX) return in_ && idx_at(o) == me ? xadd(sum, g) : sum;
        return in_ ? xadd(sum, xdiv(g, float(p.kh * p.kw))) : sum;
    }
    for (int oh = hr.x; oh <= hr.y; oh++) {
        for (int ow = wr.x; ow <= wr.y; ow++) {
            uint o = (plane * p.ho + uint(oh)) * p.wo + uint(ow);
            if (MODE == POOL_MAX) {
                if (idx_at(o) == me) sum = xadd(sum, dy_at(o));
            } else if (MODE == POOL_AVG) {
                sum = xadd(sum, xdiv(dy_at(o), float(p.kh * p.kw)));
            } else {
                ivec2 a = window(uint(oh), p.h, p.ho, 0, 0, 0);
                ivec2 b = window(uint(ow), p.w, p.wo, 0, 0, 0);
                if (a.x <= int(hi) && int(hi) < a.y && b.x <= int(wi) && int(wi) < b.y) {
                    sum = xadd(sum, xdiv(dy_at(o), float((a.y - a.x) * (b.y - b.x))));
                }
            }
        }
    }
    return sum;
}

void main() {
    GRID_STRIDE(w, (p.n + 1u) / 2u) {
        uint e = 2u * w;
        d_pair(w, p.n, vec2(elem(e), e + 1u < p.n ? elem(e + 1u) : 0.0));
    }
}
