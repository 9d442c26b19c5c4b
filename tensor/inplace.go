package tensor

import (
	"fmt"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
)

// In-place ops update a tensor that outlives the step, such as a weight.
// They return an error instead of poisoning it: a weight is never replaced
// by an error carrier, and never silently corrupted.

// AxpyUnless records y += alpha*x for Float32 tensors of one shape, unless
// flag, a one-element Float32 tensor, is non-zero when the work runs on the
// device. It is an optimizer step that the gradient scaler can skip without
// the host reading the flag.
func AxpyUnless(alpha float32, x, y, flag *Tensor) error {
	sameDevice("AxpyUnless", x, y, flag)
	for _, t := range []*Tensor{x, y, flag} {
		if t.dtype != Float32 {
			panic(&DTypeError{Op: "AxpyUnless", Got: t.dtype, Want: "float32 x, y and flag"})
		}
	}
	if !equalShape(x.shape, y.shape) {
		shapePanic("AxpyUnless", x.shape, y.shape, "x and y differ")
	}
	if flag.n != 1 {
		shapePanic("AxpyUnless", flag.shape, []int{1}, "flag must have one element")
	}
	for _, t := range []*Tensor{x, y, flag} {
		if t.err != nil {
			return t.err
		}
	}
	err := kernels.AxpyUnless(y.dev, groups1D(y, y.n), kernels.AxpyUnlessSpec{},
		kernels.AxpyUnlessPush{N: uint32(y.n), Alpha: alpha}, kernels.AxpyUnlessBind{X: x.buf, Y: y.buf, Flag: flag.buf})
	if err != nil {
		return fmt.Errorf("tensor: %w", err)
	}
	return nil
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
