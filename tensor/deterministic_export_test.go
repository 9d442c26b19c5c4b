package tensor

import "github.com/vkamp/vkamp/tensor/internal/kernels"

// DetMath runs det_math.comp's op over a, b and c (n elements each) on
// their device: the deterministic mode's own division, sqrt, exp, ln,
// multiply-add, tanh, sigmoid, 1/sqrt, erf and pow (det_math.comp's op
// numbers) on a device opened with Options.Deterministic.
func DetMath(op uint32, a, b, c *Tensor) *Tensor {
	out := New(a.dev, Float32, a.shape...)
	err := kernels.DetMath(a.dev, groups1D(out, a.n), kernels.DetMathSpec{}, kernels.DetMathPush{N: uint32(a.n), Op: op},
		kernels.DetMathBind{A: a.buf, B: b.buf, C: c.buf, D: out.buf})
	if err != nil {
		out.err = err
	}
	return out
}
