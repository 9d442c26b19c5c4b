// The dropout mask, shared by dropout.comp (seed a push constant) and
// dropout_seeded.comp (seed read from a buffer when the kernel runs). The
// mask is a hash of (seed, index), so the backward pass recomputes it from
// the seed instead of storing it, and a seed gives the same mask on every
// device (integer code).
#ifndef VKAMP_DROPOUT_GLSL
#define VKAMP_DROPOUT_GLSL

// pcg_hash is a PCG-style integer hash (Jarzynski and Olano, 2020).
uint pcg_hash(uint v) {
    uint state = v * 747796405u + 2891336453u;
    uint word = ((state >> ((state >> 28u) + 4u)) ^ state) * 277803737u;
    return (word >> 22u) ^ word;
}

// dropout_keep is element i's factor: scale, or 0 with probability
// threshold / 2^32; hseed is pcg_hash(seed), worked out once.
float dropout_keep(uint i, uint hseed, uint threshold, float scale) {
    return pcg_hash(i ^ hseed) >= threshold ? scale : 0.0;
}

#endif
