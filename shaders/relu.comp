#version 450
// relu: dst = max(a, 0), keeping NaN (GLSL max need not).
// texel form
#define OP(a) relu(a)
#include "ewise.glsl"
#include "det.glsl"
// Deterministic mode: a subnormal a is zero (SwiftShader compares it as
// zero, lavapipe does not).
float relu(float a_) {
    float a = DETERMINISTIC ? det_ftz(a_) : a_;
    return a > 0.0 || is_nan(a) ? a : 0.0;
}
// relu_half is relu on fp16 bits h: NaN stays, quieted as decoding makes
// it; a set sign gives +0; the rest stays. The same in deterministic mode:
// no fp16 value is an fp32 subnormal. The texel form takes fp16 to fp16
// this way, with no conversion (unary.glsl's OP_HALVES): a ReLU of 2M fp16
// elements on lavapipe (go test -bench ReLUF16 ./tensor, alternated) took
// 0.46-0.62 ms where it took 0.73-0.75.
uint relu_half(uint h) { return (h & 0x8000u) != 0u && !half_nan(h, DT_F16) ? 0u : half_quieted(h, DT_F16); }
#define OP_HALVES(w) (relu_half((w) & 0xFFFFu) | (relu_half((w) >> 16) << 16))
#include "unary.glsl"
