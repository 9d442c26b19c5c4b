#version 450
// nll picks the negative log-probability of each row's label: out[r] =
// -logp[r, label[r]]. Labels are int32 class indices; one outside [0, cols)
// gives NaN and raises the device's assert, so a bad label cannot pass
// unnoticed.
#define ASSERT_BINDING 3
#include "ewise.glsl"
#include "assert.glsl"

layout(push_constant) uniform Push { uint rows; uint cols; } p;
layout(set = 0, binding = 0) readonly buffer L { float logp[]; };
layout(set = 0, binding = 1) readonly buffer Y { int label[]; };
layout(set = 0, binding = 2) writeonly buffer Out { float o[]; };

void main() {
    GRID_STRIDE(r, p.rows) {
        int y = label[r];
        if (y >= 0 && uint(y) < p.cols) {
            o[r] = -logp[r * p.cols + uint(y)];
        } else {
            o[r] = uintBitsToFloat(0x7FC00000u);
            raise_assert(r, uint(y), p.cols);
        }
    }
}
