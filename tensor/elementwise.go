package tensor

import (
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// Elementwise ops take Float32, Float16 or BFloat16 inputs in any mix,
// compute in fp32 and store in the floating output dtype the caller names
// (16-bit outputs round to nearest even). An Int32 input or output panics
// with a *DTypeError. One kernel per op serves every dtype combination: the
// dtype codes are specialization constants, folded by the driver.

// Add returns a + b, broadcasting a and b (see BroadcastShape).
func Add(a, b *Tensor, out DType) *Tensor {
	return broadcastOp("Add", kernels.AddForms, kernels.BcastAdd, a, b, out)
}

// Sub returns a - b, broadcasting a and b (see BroadcastShape).
func Sub(a, b *Tensor, out DType) *Tensor {
	return broadcastOp("Sub", kernels.SubForms, kernels.BcastSub, a, b, out)
}

// Mul returns the elementwise product a * b, broadcasting a and b.
func Mul(a, b *Tensor, out DType) *Tensor {
	return broadcastOp("Mul", kernels.MulForms, kernels.BcastMul, a, b, out)
}

// Axpy returns alpha*x + y. x and y must have the same shape.
func Axpy(alpha float32, x, y *Tensor, out DType) *Tensor {
	return binaryOp("Axpy", kernels.AxpyForms, x, y, alpha, out)
}

// ReLUBackward returns the gradient of ReLU at x given the output gradient
// dy: dy where x > 0, else 0, and NaN where x is NaN.
func ReLUBackward(dy, x *Tensor, out DType) *Tensor {
	return binaryOp("ReLUBackward", kernels.ReluBackwardForms, dy, x, 0, out)
}

// GELUBackward returns dy * GELU'(x) = dy * (Phi(x) + x phi(x)), the
// derivative of the exact GELU, phi the standard normal density. On CPU
// drivers a 16-bit x looks the kernel's derivative up in a table the
// device keeps (tables.go).
func GELUBackward(dy, x *Tensor, out DType) *Tensor {
	return tabledGradOp("GELUBackward", kernels.GeluBackwardForms, dy, x, out)
}

// GELUTanhBackward returns dy * GELU'(x), the derivative of the tanh form,
// looked up as GELUBackward's.
func GELUTanhBackward(dy, x *Tensor, out DType) *Tensor {
	return tabledGradOp("GELUTanhBackward", kernels.GeluTanhBackwardForms, dy, x, out)
}

// Scale returns s*a.
func Scale(a *Tensor, s float32, out DType) *Tensor {
	return unaryOp("Scale", kernels.ScaleForms, a, s, out)
}

// ReLU returns max(x, 0); NaN stays NaN.
func ReLU(x *Tensor, out DType) *Tensor {
	return unaryOp("ReLU", kernels.ReluForms, x, 0, out)
}

// Exp returns e^x.
func Exp(x *Tensor, out DType) *Tensor { return unaryOp("Exp", kernels.ExpForms, x, 0, out) }

// GELU returns x*Phi(x) = 0.5x(1 + erf(x/sqrt(2))), the exact Gaussian
// error linear unit (torch.nn.functional.gelu's default), Phi the standard
// normal CDF. The kernel computes erfc by a Chebyshev fit of relative error
// under 1.2e-7 (Numerical Recipes' erfcc) and one exp: fp32 results are
// within 1e-6 relative of exact for |x| < 3 and 2e-5 from x = -12 on
// (TestGELUTail; 8.94e-6 on lavapipe and SwiftShader), where 1 + erf(x)
// would have cancelled to nothing. On CPU drivers 16-bit dtypes look the
// kernel's results up in a table the device keeps (tables.go).
func GELU(x *Tensor, out DType) *Tensor {
	return tabledOp("GELU", kernels.GeluForms, x, out)
}

// GELUTanh returns 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), the tanh
// approximation of GELU (gelu(x, approximate='tanh')), looked up as GELU's.
func GELUTanh(x *Tensor, out DType) *Tensor {
	return tabledOp("GELUTanh", kernels.GeluTanhForms, x, out)
}

// AddBias returns x + bias with bias, of shape [N], added to every row of x,
// of shape [..., N].
func AddBias(x, bias *Tensor, out DType) *Tensor {
	const op = "AddBias"
	sameDevice(op, x, bias)
	if len(x.shape) == 0 {
		shapePanic(op, x.shape, bias.shape, "x has no last dimension to add the bias along")
	}
	n := x.shape[len(x.shape)-1]
	if len(bias.shape) != 1 || bias.shape[0] != n {
		shapePanic(op, x.shape, bias.shape, "bias must have shape [%d], the last dimension of x", n)
	}
	checkFloating(op, out, x, bias)
	o := newOut(x.dev, out, x.shape, x, bias)
	if o.err != nil {
		return o
	}
	s := kernels.AddBiasSpec{In0DT: x.dtype.code(), In1DT: bias.dtype.code(), OutDT: out.code()}
	launched(o, kernels.AddBias(o.dev, pairs(o), s, kernels.AddBiasPush{N: uint32(x.n), Cols: uint32(n)},
		kernels.AddBiasBind{X: x.buf, Bias: bias.buf, D: o.buf}))
	return o
}

// The binary and unary kernels (shaders/include/binary.glsl, unary.glsl)
// share one interface, so each generated launcher's spec and bindings
// convert from these. Each op passes its kernel family, kernels.XForms:
// the kernel and its texel form (its `// texel form` line), which CPU
// drivers run (texels.go), paired by the generator.
type (
	binarySpec = struct {
		LocalSizeX          uint32
		In0DT, In1DT, OutDT kernels.DType
	}
	binaryBind = struct{ A, B, D *vk.Buffer }
	unarySpec  = struct {
		LocalSizeX   uint32
		In0DT, OutDT kernels.DType
	}
	unaryBind = struct{ A, D *vk.Buffer }
)

func binaryOp[S ~binarySpec, B ~binaryBind](op string, k kernels.Forms[S, kernels.EwisePush, B],
	a, b *Tensor, alpha float32, out DType) *Tensor {
	sameDevice(op, a, b)
	if !slices.Equal(a.shape, b.shape) {
		shapePanic(op, a.shape, b.shape, "shapes must be equal")
	}
	checkFloating(op, out, a, b)
	o := newOut(a.dev, out, a.shape, a, b)
	if o.err != nil {
		return o
	}
	s := binarySpec{In0DT: a.dtype.code(), In1DT: b.dtype.code(), OutDT: out.code()}
	push, bind := kernels.EwisePush{N: uint32(a.n), Alpha: alpha}, binaryBind{A: a.buf, B: b.buf, D: o.buf}
	if k.Texel != nil && texelsOn(o, a, b) {
		launched(o, k.Texel(o.dev, octs(o), S(s), push, B(bind)))
		return o
	}
	launched(o, k.Plain(o.dev, ewiseGrid(o, a.dtype == Float32 && b.dtype == Float32 && out == Float32), S(s), push, B(bind)))
	return o
}

// unaryPlain is unaryOp for a kernel without a texel form (no `// texel
// form` line, as a kernel written for GPUs may be): its storage-buffer form
// serves every device. binaryPlain is binaryOp's.
func unaryPlain[S ~unarySpec, B ~unaryBind](op string, k func(*vk.Device, [3]uint32, S, kernels.EwisePush, B) error,
	a *Tensor, alpha float32, out DType) *Tensor {
	return unaryOp(op, kernels.Forms[S, kernels.EwisePush, B]{Plain: k}, a, alpha, out)
}

func binaryPlain[S ~binarySpec, B ~binaryBind](op string, k func(*vk.Device, [3]uint32, S, kernels.EwisePush, B) error,
	a, b *Tensor, alpha float32, out DType) *Tensor {
	return binaryOp(op, kernels.Forms[S, kernels.EwisePush, B]{Plain: k}, a, b, alpha, out)
}

func unaryOp[S ~unarySpec, B ~unaryBind](op string, k kernels.Forms[S, kernels.EwisePush, B],
	a *Tensor, alpha float32, out DType) *Tensor {
	sameDevice(op, a)
	checkFloating(op, out, a)
	o := newOut(a.dev, out, a.shape, a)
	if o.err != nil {
		return o
	}
	s := unarySpec{In0DT: a.dtype.code(), OutDT: out.code()}
	push, bind := kernels.EwisePush{N: uint32(a.n), Alpha: alpha}, unaryBind{A: a.buf, D: o.buf}
	if k.Texel != nil && texelsOn(o, a) {
		launched(o, k.Texel(o.dev, octs(o), S(s), push, B(bind)))
		return o
	}
	launched(o, k.Plain(o.dev, ewiseGrid(o, a.dtype == Float32 && out == Float32), S(s), push, B(bind)))
	return o
}
