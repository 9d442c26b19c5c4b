#version 450
// relu_backward: dst = dy where x > 0, else 0; a NaN x gives NaN.
// texel form
#define OP(dy, x) relu_grad(dy, x)
#include "ewise.glsl"
#include "det.glsl"
// Deterministic mode: subnormal dy and x are zero, as SwiftShader reads them.
float relu_grad(float dy_, float x_) {
    float dy = DETERMINISTIC ? det_ftz(dy_) : dy_, x = DETERMINISTIC ? det_ftz(x_) : x_;
    if (is_nan(x)) return x;
    return x > 0.0 ? dy : 0.0;
}
// relu_back_half is relu_grad on fp16 bits: x NaN gives x, quieted as
// decoding makes it; x > 0 (sign clear, not zero) gives dy, a NaN quieted;
// else +0. The same in deterministic mode: no fp16 value is an fp32
// subnormal. The texel form takes fp16 to fp16 this way (binary.glsl's
// OP_HALVES2): on lavapipe (go test -bench ReLUBackwardF16 ./tensor,
// kernel time) 2M elements went from 14.0-14.1 to 21.2-21.8 GB/s, 256K
// from 8.1-8.9 to 11.6-12.3.
uint relu_back_half(uint dy, uint x) {
    if (half_nan(x, DT_F16)) return half_quieted(x, DT_F16);
    return (x & 0x8000u) == 0u && x != 0u ? half_quieted(dy, DT_F16) : 0u;
}
#define OP_HALVES2(wdy, wx) (relu_back_half((wdy) & 0xFFFFu, (wx) & 0xFFFFu) | (relu_back_half((wdy) >> 16, (wx) >> 16) << 16))
#include "binary.glsl"
