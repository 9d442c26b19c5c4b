// A device-side assert: a kernel that finds data it cannot take (a class
// index out of range) raises the device's assert record, which the host
// reports at its next read (tensor/assert.go). The including file defines
// ASSERT_BINDING, the binding of the record, before including this file.
//
// The record is eight words: [0] raised, 0 or the bits of 1.0 (so that the
// optimizers, which skip when found[0] != 0.0, can take it as their skip
// flag); [1] ASSERT_OP, the host's code of the op that raised it; [2] the
// row; [3] the value; [4] the bound the value had to lie below. Only the
// first invocation to raise it writes words 1 to 4; the host clears it.
#ifndef VKAMP_ASSERT_GLSL
#define VKAMP_ASSERT_GLSL

layout(constant_id = 8) const uint ASSERT_OP = 0u;

layout(set = 0, binding = ASSERT_BINDING) buffer Assert { uint assert_rec[]; };

void raise_assert(uint row, uint value, uint bound) {
    if (atomicCompSwap(assert_rec[0], 0u, 0x3F800000u) == 0u) {
        assert_rec[1] = ASSERT_OP;
        assert_rec[2] = row;
        assert_rec[3] = value;
        assert_rec[4] = bound;
    }
}

#endif
