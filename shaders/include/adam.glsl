// The body of adam.comp and its texel form (adam_tex.comp, with TEXELS
// defined).
#ifndef VKAMP_ADAM_GLSL
#define VKAMP_ADAM_GLSL

#define SECOND_MOMENT
#define UNSCALE_BINDING 9 // the scaler's state (optim.glsl)
#define TEX_BINDING 10 // the texel views' first binding (optim.glsl)
#include "optim.glsl"
#include "det.glsl"
#include "dtype.glsl"

// HALF_DT: DT_F32 writes no half copies; DT_F16 or DT_BF16 writes them.
layout(constant_id = 1) const uint HALF_DT = DT_F32;
// The half copies, two per word. Without them any buffer is bound here.
// The vec4 path stores its four halves as two words, not one uvec2: on
// lavapipe a uvec2 store made the step with half copies 1.9x the time of
// one without, two word stores 1.5-1.6x (tools/bench stream/adam-half-f32).
// The texel forms store them as one 64-bit word where the copy's chunk
// starts on an even word (any tensor's start does): on lavapipe, an AMD
// EPYC, stream/adam-half-f32 went from 0.49-0.52x of copy/buffer to
// 0.54-0.59x (alternated runs).
layout(set = 0, binding = 7) writeonly buffer H { uint h[]; };
#if defined(TEXELS)
layout(set = 0, binding = 7) writeonly buffer H64 { uint64_t h64[]; };
#endif
// LR_DEV reads the learning rate from lr_dev[0] when the step runs, not
// from the push constants (PyTorch's capturable Adam with a tensor lr): a
// captured step replays with the rate written before each replay. Without
// it any buffer is bound here.
layout(constant_id = 5) const bool LR_DEV = false;
layout(set = 0, binding = 8) readonly buffer LR { float lr_dev[]; };

layout(push_constant) uniform Push {
    uint nchunks;
    float lr;
    float beta1;
    float beta2;
    float eps;
    float weight_decay;
    uint decoupled; // AdamW: decay the weight, not the gradient
} p;

float lr; // the step's learning rate: p.lr, or lr_dev[0] (LR_DEV), set first in main

// Hyper holds the push constants that update reads for every element, in
// the global hp: main reads them at its top, before its returns
// (read_hyper). lavapipe loads a push constant read in a loop or branch,
// or after a return, lane by lane (pool.glsl's Tiling; tools/bench
// stream/adam-f32).
struct Hyper {
    float beta1, beta2, eps, weight_decay;
    bool decoupled; // AdamW: decay the weight, not the gradient
};
Hyper hp;

void read_hyper() { hp = Hyper(p.beta1, p.beta2, p.eps, p.weight_decay, p.decoupled != 0u); }

// one_minus_pow returns 1 - b^t for b in [0, 1). 1.0 - pow(b, t) cancels
// when b^t is near 1 (0.999^t for small t), and pow is only as accurate as
// exp2(t * log2(b)), whose log2 has an absolute error bound: the bias
// correction could be off by 1e-4. Powers are multiplied in the complement
// c = 1 - x instead, where x^m x^n becomes c_m + c_n (1 - c_m): no
// cancellation, a few roundings per bit of t.
float one_minus_pow(float b, uint t) {
    float acc = 0.0;   // 1 - b^0
    float c = 1.0 - b; // 1 - b^(2^i)
    for (; t != 0u; t >>= 1) {
        if ((t & 1u) != 0u) acc += c * (1.0 - acc);
        c *= 2.0 - c;
    }
    return acc;
}

// det_one_minus_pow is one_minus_pow with every rounding fixed.
float det_one_minus_pow(float b, uint t) {
    float acc = 0.0;
    float c = det_sub(1.0, b);
    for (; t != 0u; t >>= 1) {
        if ((t & 1u) != 0u) acc = det_add(acc, det_mul(c, det_sub(1.0, acc)));
        c = det_mul(c, det_sub(2.0, c));
    }
    return acc;
}

// det_update is the deterministic path of update: the same formulas, each
// operation rounded once, division and sqrt correctly rounded.
float det_update(float w, float g, inout float m, inout float v, float bc2, float step_size) {
    w = det_ftz(w);
    g = det_ftz(g);
    if (hp.decoupled) w = det_mul(w, det_sub(1.0, det_mul(lr, hp.weight_decay)));
    else g = det_mad(hp.weight_decay, w, g);
    m = det_mad(det_sub(1.0, hp.beta1), g, det_mul(hp.beta1, m));
    v = det_mad(det_sub(1.0, hp.beta2), det_mul(g, g), det_mul(hp.beta2, v));
    float den = det_add(det_div(det_sqrt(v), bc2), hp.eps);
    return det_sub(w, det_div(det_mul(step_size, m), den));
}

// update is one element's step: weight w, gradient g, moments m and v
// (updated); it returns the new weight.
float update(float w, float g, inout float m, inout float v, float bc2, float step_size) {
    if (DETERMINISTIC) return det_update(w, g, m, v, bc2, step_size);
    if (hp.decoupled) w *= 1.0 - lr * hp.weight_decay;
    else g += hp.weight_decay * w;
    m = hp.beta1 * m + (1.0 - hp.beta1) * g;
    v = hp.beta2 * v + (1.0 - hp.beta2) * g * g;
    return w - step_size * m / (sqrt(v) / bc2 + hp.eps);
}

// elem updates element e of the chunk at and returns its new weight.
float elem(uvec4 at, uint e, float bc2, float step_size) {
    uint ip = at.x + e, ig = at.y + e, im = at.z + e, iv = at.w + e;
    float m = WORD(m1, im), v = WORD(m2, iv);
    float nw = update(WORD(param, ip), unscaled(WORD(grad, ig)), m, v, bc2, step_size);
    WORD(m1, im) = m;
    WORD(m2, iv) = v;
    WORD(param, ip) = nw;
    return nw;
}

// quad updates elements 4q to 4q + 3 of a vec4 chunk (at4: its vec4
// offsets) and returns their new weights.
vec4 quad(uvec4 at4, uint q, float bc2, float step_size) {
    uint ip = at4.x + q, ig = at4.y + q, im = at4.z + q, iv = at4.w + q;
    vec4 w = LOAD4(param, ip), g = LOAD4(grad, ig), m = LOAD4(m1, im), v = LOAD4(m2, iv);
    g = unscaled4(g);
    w.x = update(w.x, g.x, m.x, v.x, bc2, step_size);
    w.y = update(w.y, g.y, m.y, v.y, bc2, step_size);
    w.z = update(w.z, g.z, m.z, v.z, bc2, step_size);
    w.w = update(w.w, g.w, m.w, v.w, bc2, step_size);
    STORE4(m1, im, m);
    STORE4(m2, iv, v);
    STORE4(param, ip, w);
    return w;
}

// halves4 is a quad's half copies as two words.
uvec2 halves4(vec4 w) {
    return uvec2(f32_to_half_flat(w.x, HALF_DT) | (f32_to_half_flat(w.y, HALF_DT) << 16),
                 f32_to_half_flat(w.z, HALF_DT) | (f32_to_half_flat(w.w, HALF_DT) << 16));
}

// pairs updates a chunk's elements from pair from on, two consecutive ones
// per invocation, and stores their half copy's words if copy: a word of
// the copy has one writer. An odd count pads the last word's high half
// with 0, as Cast.
void pairs(uvec4 at, uint from, uint count, uint first, bool copy, float bc2, float step_size) {
    GROUP_STRIDE(q, from, (count + 1u) / 2u) {
        uint lo = f32_to_half_flat(elem(at, 2u * q, bc2, step_size), HALF_DT);
        uint hi = 0u;
        if (2u * q + 1u < count) hi = f32_to_half_flat(elem(at, 2u * q + 1u, bc2, step_size), HALF_DT);
        if (copy) h[first + q] = lo | (hi << 16);
    }
}

void main() {
    read_hyper();
    if (found[0] != 0.0) return;
    uint c = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (c >= p.nchunks) return;
    uvec4 at = chunks[2u * c];
    uvec4 more = chunks[2u * c + 1u]; // count, half copy's first word, has a half copy
    uint t = steps[0] + 1u;
    lr = LR_DEV ? lr_dev[0] : p.lr;
    read_inv();
    float bc2, step_size;
    if (DETERMINISTIC) {
        bc2 = det_sqrt(det_one_minus_pow(hp.beta2, t));
        step_size = det_div(lr, det_one_minus_pow(hp.beta1, t));
    } else {
        bc2 = sqrt(one_minus_pow(hp.beta2, t));
        step_size = lr / one_minus_pow(hp.beta1, t);
    }
    uint count = more.x;
    bool half_copy = HALF_DT != DT_F32 && more.z != 0u;
    uint quads = chunk_vec4(at) ? count >> 2 : 0u; // the half copy is stored by words, at any word
    uvec4 at4 = at >> 2;
#if defined(TEXELS)
    // A kernel that writes half copies makes every chunk by one quad loop
    // and one pair loop, storing a copy where the chunk has one: lavapipe
    // runs the loops of every branch whatever the chunk takes, each at
    // least one masked trip. A copy whose chunk starts on an odd word
    // (never a tensor's start) goes by the pairs, which store it by words.
    // lavapipe, stream/adam-half-f32 at 200704 elements (the MLP's weights):
    // 4% faster without a second quad loop for odd copies, 5-9% more with one
    // loop pair for chunks with and without a copy (medians of 5-6 runs).
    if (HALF_DT != DT_F32) {
        uint hq = half_copy && (more.y & 1u) != 0u ? 0u : quads;
        GROUP_STRIDE(q, 0u, hq) {
            vec4 w = quad(at4, q, bc2, step_size);
            if (half_copy) h64[more.y / 2u + q] = packUint2x32(halves4(w));
        }
        pairs(at, 2u * hq, count, more.y, half_copy, bc2, step_size);
        return;
    }
#endif
    if (!half_copy) {
        GROUP_STRIDE(q, 0u, quads)
            quad(at4, q, bc2, step_size);
        GROUP_STRIDE(e, 4u * quads, count)
            elem(at, e, bc2, step_size);
        return;
    }
    GROUP_STRIDE(q, 0u, quads) {
        uvec2 w = halves4(quad(at4, q, bc2, step_size));
        h[more.y + 2u * q] = w.x;
        h[more.y + 2u * q + 1u] = w.y;
    }
    pairs(at, 2u * quads, count, more.y, true, bc2, step_size);
}

#endif
