#version 450
// unscale_check is the gradient scaler's fused pass over all gradients: it
// multiplies every element by inv_scale in place (even non-finite ones, as
// PyTorch does; not at all when inv_scale is 1, so bits stay) and raises a
// flag if any element is inf or NaN, before or after the multiply. Checking
// the result too is beyond PyTorch: once the scale falls below about
// 2.9e-39 (or is 0), inv_scale is +inf and a zero gradient becomes NaN, and
// with a scale below 1 a finite gradient can overflow; either would reach
// the weights unflagged. The gradients are reached through one
// binding of their memory block and a table of chunks, so one dispatch
// covers them all. One workgroup per chunk; each raises the flags at most
// once, with plain stores of 1.0 (every writer stores the same value).
// Deterministic mode: subnormal gradients, reciprocals and products are
// flushed (det.glsl), as SwiftShader computes them.
#include "common.glsl"
#include "fp16.glsl"
#include "det.glsl"

layout(push_constant) uniform Push { uint nchunks; } p;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
// Per chunk: first word, element count, dtype (0 fp32, 1 fp16), unused.
layout(set = 0, binding = 1) readonly buffer Table { uvec4 chunks[]; };
// Scaler state: [0] scale, [1] inv_scale, [2] growth tracker, [3] found_inf
// of all optimizers since the last update, [4] overflows counted.
layout(set = 0, binding = 2) buffer State { uint state[]; };
layout(set = 0, binding = 3) writeonly buffer Found { float found[]; };

shared uint wg_bad;

bool nonfinite32(uint w) { return (w & 0x7F800000u) == 0x7F800000u; }
bool nonfinite16(uint h) { return (h & 0x7C00u) == 0x7C00u; }
float unscale(float x, float inv) { return DETERMINISTIC ? det_mul(x, inv) : x * inv; }
uint unscale16(uint h, float inv) { return f32_to_f16(unscale(f16_to_f32(h), inv)); }

void main() {
    uint c = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (gl_LocalInvocationIndex == 0u) wg_bad = 0u;
    barrier();
    if (c < p.nchunks) {
        uvec4 e = chunks[c];
        float inv = uintBitsToFloat(state[1]);
        bool scale = inv != 1.0;
        bool bad = false;
        if (e.z == 0u) {
            for (uint i = gl_LocalInvocationIndex; i < e.y; i += gl_WorkGroupSize.x) {
                uint w = data[e.x + i];
                bad = bad || nonfinite32(w);
                if (scale) {
                    uint r = floatBitsToUint(unscale(uintBitsToFloat(w), inv));
                    bad = bad || nonfinite32(r);
                    data[e.x + i] = r;
                }
            }
        } else {
            for (uint i = gl_LocalInvocationIndex; 2u * i < e.y; i += gl_WorkGroupSize.x) {
                uint w = data[e.x + i];
                uint lo = w & 0xFFFFu, hi = w >> 16;
                bool two = 2u * i + 1u < e.y; // the high half of an odd tail is padding
                bad = bad || nonfinite16(lo) || (two && nonfinite16(hi));
                if (scale) {
                    lo = unscale16(lo, inv);
                    if (two) hi = unscale16(hi, inv);
                    bad = bad || nonfinite16(lo) || (two && nonfinite16(hi));
                    data[e.x + i] = lo | (hi << 16);
                }
            }
        }
        if (bad) atomicOr(wg_bad, 1u);
    }
    barrier();
    if (gl_LocalInvocationIndex == 0u && wg_bad != 0u) {
        found[0] = 1.0;
        state[3] = floatBitsToUint(1.0);
    }
}
