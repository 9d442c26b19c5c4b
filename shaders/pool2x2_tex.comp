#version 450
// pool2x2_tex is pool2d's texel form for CPU drivers where the windows tile
// the input two by two: kernel 2, stride 2, no padding (PyTorch's
// MaxPool2d(2) and AvgPool2d(2)), planes of even height and rows whose width
// W is a multiple of 8. Then output element e of row R (R over planes*Ho)
// reads the pair at 2e + 2R*Wo of input row 2R and the pair below it, and
// four consecutive outputs of a row read one aligned block of 8 from each
// row: two texel fetches where pool2d makes four scattered loads per output
// (lavapipe loads storage buffers lane by lane). Each invocation makes four
// outputs (Wo is a multiple of 4, so they share a row), with pool2d's
// arithmetic in pool2d's order: the same bits, argmax included.
// MAX_BITS16's loop makes eight, two such fours, and stores their 16 bytes
// at once: stores cost lavapipe a loop over the lanes each (tools/bench
// stream/maxpool-f16, 2 cores: 16.1 -> 18.8 GB/s).
#define TEXELS
#include "texels.glsl"
#include "pool.glsl"
#include "det_extra.glsl"

layout(constant_id = 1) const uint IN0_DT = DT_F32;
layout(constant_id = 3) const uint OUT_DT = DT_F32;

layout(set = 0, binding = 0) uniform usamplerBuffer x;
layout(set = 0, binding = 1) writeonly buffer D { uint64_t d2[]; };   // 4 16-bit outputs a word
layout(set = 0, binding = 1) writeonly buffer D8 { u64vec2 d[]; };    // 8 16-bit outputs
layout(set = 0, binding = 1) writeonly buffer D4 { u64vec2 d4[]; };   // 4 32-bit outputs
layout(set = 0, binding = 2) writeonly buffer Idx { u64vec2 idx4[]; }; // 4 argmaxes

DEFINE_TEX_LOADS(x, x, IN0_DT)

// window4 is one output of pool2d's elem: a, b the window's top pair, c, d
// the bottom one, q the plane index of a.
float window4(float a, float b, float c, float d, uint q, uint w, out uint at) {
    at = q;
    if (MODE == POOL_MAX) {
        float m = uintBitsToFloat(0xFF800000u); // -inf
        int km = order_key(m);
        float v[4] = float[4](a, b, c, d);
        uint qs[4] = uint[4](q, q + 1u, q + w, q + w + 1u);
        bool nan_ = false;
        for (uint i = 0u; i < 4u; i++) {
            float u = DETERMINISTIC ? det_ftz(v[i]) : v[i]; // SwiftShader compares subnormals as zero
            int ku = order_key(u);
            if (!nan_ && (ku > km || is_nan(u))) {
                m = u;
                km = ku;
                at = qs[i];
                nan_ = is_nan(u);
            }
        }
        return m;
    }
    float sum = 0.0;
    sum = xadd(sum, a);
    sum = xadd(sum, b);
    sum = xadd(sum, c);
    sum = xadd(sum, d);
    return xdiv(sum, 4.0);
}

// MAX_BITS16 (pool.glsl): window4's result is one of its inputs converted
// to fp32 and back, which gives the same bits but for a NaN, made quiet. So
// window16 compares the bits as integers, ordered as the floats they encode
// (key16), and converts nothing: on lavapipe, five conversions an output
// were most of the work (tools/bench stream/maxpool-f16: 0.37-0.40x
// copy/buffer before).

// key16 orders 16-bit floats h as integers, -0 equal to +0 and NaN above
// +inf: so the first NaN of a window, which window4 keeps, is its first
// greatest key, as the first maximum is.
int key16(uint h) {
    int m = int(h & 0x7FFFu);
    return m > int(half_inf(IN0_DT)) ? 0x8000 : (h & 0x8000u) != 0u ? -m : m;
}

// window16 is window4 on the bits of the window's pixels (for a first pixel
// of -inf, it and window4's -inf are the same bits).
uint window16(uint a, uint b, uint c, uint d, uint q, uint w, out uint at) {
    uint m = a;
    int km = key16(a);
    at = q;
    uint v[3] = uint[3](b, c, d);
    uint qs[3] = uint[3](q + 1u, q + w, q + w + 1u);
    for (uint i = 0u; i < 3u; i++) {
        int k = key16(v[i]);
        if (k > km) {
            m = v[i];
            km = k;
            at = qs[i];
        }
    }
    return km == 0x8000 ? m | half_quiet(IN0_DT) : m;
}

// outputs16 makes outputs 4j..4j+3 for MAX_BITS16, storing their argmaxes
// and returning their bits as two words: the top and bottom pairs of window
// k are the halves of word k of the two rows' texels. t and q are the
// top-left input's (tile2x2), t a multiple of 8.
uvec2 outputs16(uint j, uint t, uint q) {
    uvec4 a = texelFetch(x, int(t / 8u)), b = texelFetch(x, int((t + tl.w) / 8u)), at;
    uvec4 y;
    for (uint k = 0u; k < 4u; k++)
        y[k] = window16(a[k] & 0xFFFFu, a[k] >> 16, b[k] & 0xFFFFu, b[k] >> 16, q + 2u * k, tl.w, at[k]);
    idx4[j] = wide2(at);
    return uvec2(y.x | (y.y << 16), y.z | (y.w << 16));
}

// outputs makes outputs 4j..4j+3 through fp32.
void outputs(uint j, uint t, uint q) {
    vec4 a0, a1, b0, b1;
    x_oct(t / 8u, 0u, true, a0, a1);
    x_oct((t + tl.w) / 8u, 0u, true, b0, b1);
    uvec4 at;
    vec4 y = vec4(window4(a0.x, a0.y, b0.x, b0.y, q, tl.w, at.x), window4(a0.z, a0.w, b0.z, b0.w, q + 2u, tl.w, at.y),
                  window4(a1.x, a1.y, b1.x, b1.y, q + 4u, tl.w, at.z), window4(a1.z, a1.w, b1.z, b1.w, q + 6u, tl.w, at.w));
    if (dt_wide(OUT_DT)) {
        d4[j] = wide2(uvec4(f32_to_word(y.x, OUT_DT), f32_to_word(y.y, OUT_DT), f32_to_word(y.z, OUT_DT), f32_to_word(y.w, OUT_DT)));
    } else {
        d2[j] = packUint2x32(uvec2(pack_half2(y.x, y.y, OUT_DT), pack_half2(y.z, y.w, OUT_DT)));
    }
    if (MODE == POOL_MAX) idx4[j] = wide2(at);
}

void main() {
    read_tiling();
    if (MAX_BITS16) {
        SPAN_STRIDE(i, p.n / 8u) {
            uvec2 t, q;
            tile2x2_pair(8u * i, t, q);
            d[i] = wide2(uvec4(outputs16(2u * i, t.x, q.x), outputs16(2u * i + 1u, t.y, q.y)));
        }
        if (gl_GlobalInvocationID.x == 0u && (p.n & 4u) != 0u) {
            uint t, q;
            tile2x2(p.n - 4u, t, q);
            d2[p.n / 4u - 1u] = packUint2x32(outputs16(p.n / 4u - 1u, t, q));
        }
        return;
    }
    SPAN_STRIDE(j, p.n / 4u) {
        uint t, q; // the top-left input, t a multiple of 8
        tile2x2(4u * j, t, q);
        outputs(j, t, q);
    }
}
