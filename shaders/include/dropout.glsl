// The dropout mask, and the body of dropout.comp (seed a push constant) and
// dropout_seeded.comp (seed read from a buffer when the kernel runs). The
// mask is a hash of (seed, index), so the backward pass recomputes it from
// the seed instead of storing it, and a seed gives the same mask on every
// device (integer code). The including kernel declares push constants p
// with n, threshold and scale, x and o with their loads and stores
// (DEFINE_LOADS and DEFINE_STORE, or in its texel form DEFINE_TEX_LOADS and
// DEFINE_TEX_OUTPUT), and calls DROPOUT_MAIN(h) with the seed's hash.
#ifndef VKAMP_DROPOUT_GLSL
#define VKAMP_DROPOUT_GLSL

// pcg_hash is a PCG-style integer hash (Jarzynski and Olano, 2020).
uint pcg_hash(uint v) {
    uint state = v * 747796405u + 2891336453u;
    uint word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// keep_threshold and keep_scale are p.threshold and p.scale, read once at
// main's top (DROPOUT_MAIN): lavapipe loads a push constant read inside a
// loop lane by lane (pool.glsl's Tiling; tools/bench stream/dropout-f16).
uint keep_threshold;
float keep_scale;

// dropout_keep is element i's factor: keep_scale, or 0 with probability
// keep_threshold / 2^32; hseed is pcg_hash(seed), worked out once.
float dropout_keep(uint i, uint hseed) { return pcg_hash(i ^ hseed) >= keep_threshold ? keep_scale : 0.0; }

#if defined(TEXELS)
// The texel form (texels.glsl) makes a block of 8 elements per invocation.

// keep4 is x times the factors of elements i .. i+3.
vec4 keep4(vec4 x, uint i, uint h) {
    return vec4(xmul(x.x, dropout_keep(i, h)), xmul(x.y, dropout_keep(i + 1u, h)),
                xmul(x.z, dropout_keep(i + 2u, h)), xmul(x.w, dropout_keep(i + 3u, h)));
}

void dropout_oct(uint q, bool full, uint h) {
    vec4 lo, hi;
    x_oct(q, p.n, full, lo, hi);
    o_oct(q, p.n, full, keep4(lo, 8u * q, h), keep4(hi, 8u * q + 4u, h));
}

#define DROPOUT_LOOP(H)                                                       \
    uint full_ = p.n / 8u;                                                    \
    SPAN_STRIDE(q_, full_) dropout_oct(q_, true, (H));                        \
    if (gl_GlobalInvocationID.x == 0u && 8u * full_ < p.n) dropout_oct(full_, false, (H));
#else
#define DROPOUT_LOOP(H)                                                       \
    GRID_STRIDE(w_, (p.n + 1u) / 2u) {                                        \
        vec2 v_ = x_pair(w_, p.n);                                            \
        v_.x = xmul(v_.x, dropout_keep(2u * w_, (H)));                        \
        v_.y = xmul(v_.y, dropout_keep(2u * w_ + 1u, (H)));                   \
        o_pair(w_, p.n, v_);                                                  \
    }
#endif

#define DROPOUT_MAIN(H)                                                       \
    keep_threshold = p.threshold;                                             \
    keep_scale = p.scale;                                                     \
    DROPOUT_LOOP(H)

#endif
