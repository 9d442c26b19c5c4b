// Shared by the 2-D pooling kernels: the push constants and the window of
// an output pixel along one axis. MODE (constant 4) is POOL_MAX, POOL_AVG or
// POOL_ADAPTIVE; the windows are PyTorch's.
#ifndef VKAMP_POOL_GLSL
#define VKAMP_POOL_GLSL

#include "divmagic.glsl"

#define POOL_MAX 0u
#define POOL_AVG 1u
#define POOL_ADAPTIVE 2u

layout(constant_id = 4) const uint MODE = POOL_MAX;

layout(push_constant) uniform PoolPush {
    uint n;      // elements written
    uint h, w;   // input size
    uint ho, wo; // output size
    int kh, kw;  // kernel size (max, avg)
    int sh, sw;  // stride (max, avg)
    int ph, pw;  // padding (max, avg)
    // div_by's magic numbers (divmagic.glsl) for the written tensor's width
    // and height (Wo and Ho forward, W and H backward) and, backward, for
    // the strides.
    uint dwM, dwS, dhM, dhS;
    uint shM, shS, swM, swS;
} p;

// plane_pixel splits element e of a [planes, H, W] tensor, the one the
// kernel writes, into its plane and (y, x) in the plane.
uvec3 plane_pixel(uint e, uint h, uint w) {
    uint q = div_by(e, p.dwM, p.dwS);
    uint plane = div_by(q, p.dhM, p.dhS);
    return uvec3(plane, q - plane * h, e - q * w);
}

// window returns [start, end) along an axis of length in for output index
// o of out: clipped to the input for max and avg (whose padding is -inf or
// counted zeros), floor(o*in/out) to ceil((o+1)*in/out) when adaptive.
ivec2 window(uint o, uint in_len, uint out_len, int k, int s, int pad) {
    if (MODE == POOL_ADAPTIVE) {
        return ivec2(int((o * in_len) / out_len), int(((o + 1u) * in_len + out_len - 1u) / out_len));
    }
    int start = int(o) * s - pad;
    return ivec2(max(start, 0), min(start + k, int(in_len)));
}

// tile2x2 returns, for output e of a pooling whose windows tile the input
// two by two in planes of even height, its top-left input pixel: t, its
// element index (2e + 2R*Wo for output row R), and q, its index in the
// plane. The forward's div_by numbers (Wo, Ho) are in the push constants.
void tile2x2(uint e, out uint t, out uint q) {
    uint r = div_by(e, p.dwM, p.dwS);     // the output row: e / Wo
    uint plane = div_by(r, p.dhM, p.dhS); // r / Ho
    t = 2u * e + 2u * r * p.wo;
    q = 2u * ((r - plane * p.ho) * p.w + (e - r * p.wo));
}

// MAX_BITS16 is whether the two-by-two texel forms move max pooling's bits
// without converting them (pool2x2_tex.comp, pool2x2_backward_tex.comp):
// from a 16-bit dtype to itself, outside the deterministic mode.
#define MAX_BITS16 (MODE == POOL_MAX && !dt_wide(IN0_DT) && OUT_DT == IN0_DT && !DETERMINISTIC)

#endif