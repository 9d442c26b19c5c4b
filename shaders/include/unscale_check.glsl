// The body of unscale_check.comp and its texel form (unscale_check_tex.comp,
// with TEXELS defined).
#ifndef VKAMP_UNSCALE_CHECK_GLSL
#define VKAMP_UNSCALE_CHECK_GLSL

#include "common.glsl"
#include "fp16.glsl"
#include "det.glsl"

layout(push_constant) uniform Push { uint nchunks; } p;
// CHECK_ONLY checks the gradients as unscaling them would, and stores
// nothing: the optimizer step that follows unscales them as it reads them
// (LossScale.Check, then AdamConfig.Unscale or SGDConfig.Unscale: PyTorch's
// fused optimizers).
layout(constant_id = 1) const bool CHECK_ONLY = false;
// GRADS is what the host knows of the gradients' dtypes: 0 each chunk's
// says, 1 all fp32, 2 all fp16. A known one leaves out the other dtype's
// sweep, of which CPU drivers run a masked trip per invocation anyway:
// lavapipe's stream/unscale-f32 at 200704 elements went from 14.7 to 22.9
// GB/s (tools/bench, 6 alternated runs, medians).
layout(constant_id = 2) const uint GRADS = 0u;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
// The same binding by 16-byte words: the 16-byte aligned run of a chunk goes
// four words per access (a quarter of the loop trips; on lavapipe, with the
// dtype tested outside the loop, 1.8x as fast), head and tail word by word.
layout(set = 0, binding = 0) buffer Data4 { uvec4 data4[]; };
#if defined(TEXELS)
// The texel form reads the same memory as texels (SIMD gathers on CPU
// drivers) and stores 64-bit words, half the stores of uvec4s; each word is
// read and then written by the same invocation.
layout(set = 0, binding = 0) buffer Data64 { u64vec2 data64[]; };
layout(set = 0, binding = 4) uniform usamplerBuffer data_tex;
uvec4 load4(uint i) { return texelFetch(data_tex, int(i)); }
void store4(uint i, uvec4 w) { data64[i] = wide2(w); }
#else
uvec4 load4(uint i) { return data4[i]; }
void store4(uint i, uvec4 w) { data4[i] = w; }
#endif
// Per chunk: first word, element count, dtype (0 fp32, 1 fp16), unused.
layout(set = 0, binding = 1) readonly buffer Table { uvec4 chunks[]; };
// Scaler state: [0] scale, [1] inv_scale, [2] growth tracker, [3] found_inf
// of all optimizers since the last update, [4] overflows counted.
layout(set = 0, binding = 2) buffer State { uint state[]; };
// found[0] as bits: those of 0.0 or 1.0.
layout(set = 0, binding = 3) buffer Found { uint found_bits[]; };

const uint ONE_BITS = 0x3F800000u; // 1.0

float unscale(float x, float inv) { return DETERMINISTIC ? det_mul(x, inv) : x * inv; }
uint unscale32(uint w, float inv) { return floatBitsToUint(unscale(uintBitsToFloat(w), inv)); }
uint unscale16(uint h, float inv) { return f32_to_f16(unscale(f16_to_f32(h), inv)); }
// unscale_word multiplies the elements of word w: one fp32, or two fp16
// (the high one only if two: past an odd count it is padding, kept).
uint unscale_word(uint w, float inv, bool wide, bool two) {
    if (wide) return unscale32(w, inv);
    uint hi = two ? unscale16(w >> 16, inv) : w >> 16;
    return unscale16(w & 0xFFFFu, inv) | (hi << 16);
}
uvec4 unscale_words(uvec4 w, float inv, bool wide) {
    return uvec4(unscale_word(w.x, inv, wide, true), unscale_word(w.y, inv, wide, true),
                 unscale_word(w.z, inv, wide, true), unscale_word(w.w, inv, wide, true));
}

// The check keeps only the largest magnitude's bits, which order
// magnitudes as integers, inf above every finite value and NaN above inf.
// Unscaling is monotonic in the magnitude (one rounded multiply by
// inv_scale, a flush or an fp16 rounding after it), so some element or its
// product is inf or NaN exactly when the largest magnitude or its product
// is: an overflow overflows the largest too, and inf or NaN inv_scale
// makes every product inf or NaN. Two integer operations per element
// instead of two tests and a multiply.
uvec4 mag32(uvec4 w) { return w & 0x7FFFFFFFu; }
uvec4 mag16(uvec4 w) { return max(w & 0x7FFFu, (w >> 16) & 0x7FFFu); }
bool nonfinite(uint mag, bool wide, float inv, bool scale) {
    uint inf = wide ? 0x7F800000u : 0x7C00u;
    if (mag >= inf) return true;
    if (!scale) return false;
    uint r = wide ? unscale32(mag, inv) & 0x7FFFFFFFu : unscale16(mag, inv) & 0x7FFFu;
    return r >= inf;
}

// sweep unscales the uvec4s v0..v0+nv-1 of a chunk, of fp32 elements if
// wide, fp16 ones otherwise, and returns the largest magnitudes it read.
// In the texel form its loop walks spans (GROUP_STRIDE): with the checks
// by magnitude, lavapipe on an AMD EPYC ran unscale at 0.60 -> 1.05x of
// vkCmdCopyBuffer and the check alone at 0.34 -> 0.75x (16M fp32, both
// changes); the earlier checks had been slower by spans on an Intel
// Sapphire Rapids.
uvec4 sweep(uint v0, uint nv, float inv, bool scale, const bool wide) {
    uvec4 mag = uvec4(0u);
    GROUP_STRIDE(i, 0u, nv) {
        uvec4 w = load4(v0 + i);
        mag = max(mag, wide ? mag32(w) : mag16(w));
        if (scale && !CHECK_ONLY) store4(v0 + i, unscale_words(w, inv, wide));
    }
    return mag;
}

void main() {
    uint c = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint lid = gl_LocalInvocationIndex;
    if (c >= p.nchunks) return;
    uvec4 e = chunks[c];
    float inv = uintBitsToFloat(state[1]);
    bool scale = inv != 1.0;
    bool wide = GRADS == 1u || (GRADS != 2u && e.z == 0u);
    // The chunk's words: whole ones (every element counted), then for an
    // odd fp16 count one whose high half is padding. Whole words split
    // into a head up to a 16-byte boundary, a run of uvec4s and a tail;
    // head, tail and the padded word (at most 7 words) take one scalar
    // access each, by the first invocations.
    uint whole = wide ? e.y : e.y / 2u;
    uint head = min((0u - e.x) & 3u, whole);
    uint v0 = (e.x + head) / 4u;
    uint nv = (whole - head) / 4u;
    uint after = head + 4u * nv;
    uint nscalar = head + (wide ? e.y : (e.y + 1u) / 2u) - after;
    uvec4 mag = uvec4(0u);
    // Two calls with constant dtypes, not one loop that tests it: CPU
    // drivers would make both dtypes' arithmetic for every word.
    if (wide) mag = sweep(v0, nv, inv, scale, true);
    else mag = sweep(v0, nv, inv, scale, false);
    if (lid < nscalar) {
        uint i = lid < head ? lid : after + (lid - head);
        bool two = 2u * i + 1u < e.y;
        uint w = data[e.x + i];
        uint counted = wide || two ? ~0u : 0xFFFFu; // the bits of elements
        mag.x = max(mag.x, wide ? mag32(uvec4(w)).x : mag16(uvec4(w & counted)).x);
        if (scale && !CHECK_ONLY) data[e.x + i] = unscale_word(w, inv, wide, two);
    }
    // An invocation whose largest magnitude, or its product, is inf or NaN
    // raises both flags itself: ORing in 1.0's bits leaves 0.0 or 1.0
    // however many do. The workgroup's reduction to one store this
    // replaces waited at two barriers (lavapipe, MNIST MLP AMP step:
    // unscale over Adam 0.38 before, 0.30 after, kernel timestamps in one
    // run).
    if (nonfinite(max(max(mag.x, mag.y), max(mag.z, mag.w)), wide, inv, scale)) {
        atomicOr(found_bits[0], ONE_BITS);
        atomicOr(state[3], ONE_BITS);
    }
}

#endif
