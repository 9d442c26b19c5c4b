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

// Tiling holds the push constants that the two-by-two texel forms read in
// their loops, in the global tl: main reads them once, at its top
// (read_tiling). lavapipe loads a push constant read inside a loop or
// branch, or after a return, lane by lane, and one read outside once for
// all lanes (tools/bench, lavapipe: stream/maxpool-f16 20.5 -> 24.5 GB/s,
// maxpool-backward-f16 23.6 -> 28.3).
struct Tiling {
    uint w, wo, ho;          // the input's width, the output's width and height
    uint dwM, dwS, dhM, dhS; // div_by's numbers for Wo and Ho
};
Tiling tl;

void read_tiling() { tl = Tiling(p.w, p.wo, p.ho, p.dwM, p.dwS, p.dhM, p.dhS); }

// tile2x2_pair returns, for outputs e and e + 4 of a pooling whose windows
// tile the input two by two in planes of even height (e a multiple of 4),
// their top-left input pixels: t, their element indices (2e + 2R*Wo for
// output row R), and q, their indices in the plane. Where e's four end
// their row (Wo is a multiple of 4) the next four start the next, in the
// next plane after a plane's last row: one pair of divisions for both
// (tools/bench stream/maxpool-f16, lavapipe: 4-5% of the kernel's time).
// The forward's div_by numbers (Wo, Ho) are in tl.
void tile2x2_pair(uint e, out uvec2 t, out uvec2 q) {
    uint r = div_by(e, tl.dwM, tl.dwS);     // the output row: e / Wo
    uint plane = div_by(r, tl.dhM, tl.dhS); // r / Ho
    uint rp = r - plane * tl.ho, c = e - r * tl.wo; // the row in its plane, e's column
    t.x = 2u * e + 2u * r * tl.wo;
    q.x = 2u * (rp * tl.w + c);
    bool wrap = c + 4u == tl.wo;
    t.y = t.x + 8u + (wrap ? 2u * tl.wo : 0u);
    q.y = !wrap ? q.x + 8u : rp + 1u == tl.ho ? 0u : 2u * (rp + 1u) * tl.w;
}

// tile2x2 is tile2x2_pair's first output alone, e any output.
void tile2x2(uint e, out uint t, out uint q) {
    uvec2 t2, q2;
    tile2x2_pair(e, t2, q2);
    t = t2.x;
    q = q2.x;
}

// order_key orders floats as integers, -0 equal to +0: max pooling
// compares keys, not floats (pool2d, and window4 of the texel forms), since
// a driver that flushes fp32 subnormals (Mesa 26's lavapipe) compares them,
// and bf16's, as zero, and the window's maximum would be its first element
// instead (key16, for 16-bit bits, is exact too).
int order_key(float v) {
    uint u = floatBitsToUint(v);
    return (u & 0x80000000u) != 0u ? -int(u & 0x7FFFFFFFu) : int(u);
}

// MAX_BITS16 is whether the two-by-two texel forms move max pooling's bits
// without converting them (pool2x2_tex.comp, pool2x2_backward_tex.comp):
// from a 16-bit dtype to itself, outside the deterministic mode.
#define MAX_BITS16 (MODE == POOL_MAX && !dt_wide(IN0_DT) && OUT_DT == IN0_DT && !DETERMINISTIC)

#endif