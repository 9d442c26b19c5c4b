package tensor

import (
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
	return inplace(y, "axpy_unless", nil, kernels.Groups(y.dev, y.n), []uint32{uint32(y.n), f32bits(alpha)}, x, y, flag)
}

// inplace records a kernel that updates a live tensor, returning failures.
func inplace(y *Tensor, op string, spec map[uint32]uint32, groups [3]uint32, push []uint32, bind ...*Tensor) error {
	return run(y.dev, op, spec, groups, push, bind...)
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
