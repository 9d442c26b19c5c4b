// Shared by the 2-D pooling kernels: the push constants and the window of
// an output pixel along one axis. MODE (constant 4) is POOL_MAX, POOL_AVG or
// POOL_ADAPTIVE; the windows are PyTorch's.
#ifndef VKAMP_POOL_GLSL
#define VKAMP_POOL_GLSL

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
} p;

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

#endif
