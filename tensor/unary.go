package tensor

import "github.com/vkamp/vkamp/tensor/internal/kernels"

// Elementwise math with PyTorch's special values on every driver (the
// kernels do not trust the driver's log, sqrt or tanh at NaN, ±inf, ±0 or
// negative inputs; see shaders/include/mathx.glsl). Like Exp, each takes
// any floating dtype, computes in fp32 and rounds once to out.

// Neg returns -x.
func Neg(x *Tensor, out DType) *Tensor { return unaryOp("Neg", kernels.NegForms, x, 0, out) }

// Log returns the natural logarithm of x: NaN for x < 0, -inf for ±0.
func Log(x *Tensor, out DType) *Tensor { return unaryOp("Log", kernels.LogForms, x, 0, out) }

// Sqrt returns the square root of x: NaN for x < 0, -0 for -0.
func Sqrt(x *Tensor, out DType) *Tensor {
	return unaryOp("Sqrt", kernels.SqrtForms, x, 0, out)
}

// Rsqrt returns 1/sqrt(x): +inf for +0, -inf for -0, NaN for x < 0.
func Rsqrt(x *Tensor, out DType) *Tensor {
	return unaryOp("Rsqrt", kernels.RsqrtForms, x, 0, out)
}

// Tanh returns the hyperbolic tangent of x (±1 at ±inf).
func Tanh(x *Tensor, out DType) *Tensor {
	return unaryOp("Tanh", kernels.TanhForms, x, 0, out)
}

// Sigmoid returns 1/(1 + e^-x), computed so that it never overflows.
func Sigmoid(x *Tensor, out DType) *Tensor {
	return unaryOp("Sigmoid", kernels.SigmoidForms, x, 0, out)
}

// SiLU returns x * sigmoid(x) (PyTorch's silu), rounded once to out.
func SiLU(x *Tensor, out DType) *Tensor { return unaryOp("SiLU", kernels.SiluForms, x, 0, out) }

// SiLUBackward returns dy * SiLU'(x) = dy * s(1 + x(1 - s)), s = sigmoid(x).
func SiLUBackward(dy, x *Tensor, out DType) *Tensor {
	return binaryOp("SiLUBackward", kernels.SiluBackwardForms, dy, x, 0, out)
}

// Mish returns x * tanh(softplus(x)) (PyTorch's mish), rounded once to out.
func Mish(x *Tensor, out DType) *Tensor { return unaryOp("Mish", kernels.MishForms, x, 0, out) }

// MishBackward returns dy * Mish'(x) = dy * (t + x s(1 - t^2)), t =
// tanh(softplus(x)), s = sigmoid(x).
func MishBackward(dy, x *Tensor, out DType) *Tensor {
	return binaryOp("MishBackward", kernels.MishBackwardForms, dy, x, 0, out)
}

// Pow returns x^p as PyTorch's pow(tensor, scalar): p of 2, 3, -1 and -2
// by products, 0.5 and -0.5 as Sqrt and Rsqrt (so (-inf)^0.5 is NaN, where
// C's pow gives +inf), other p as C's pow: x^0 = 1 and 1^p = 1 even for
// NaN, a negative x to a non-integer p is NaN.
func Pow(x *Tensor, p float32, out DType) *Tensor {
	return unaryOp("Pow", kernels.PowForms, x, p, out)
}
