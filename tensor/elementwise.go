package tensor

import (
	"math"
	"slices"
)

// Elementwise ops take Float32 or Float16 inputs in any mix, compute in fp32
// and store in the output dtype the caller names (fp16 rounds to nearest
// even). One kernel per op serves every dtype combination: the dtypes are
// specialization constants 1 (first input), 2 (second input) and 3 (output).

// Add returns a + b. a and b must have the same shape.
func Add(a, b *Tensor, out DType) *Tensor { return binaryOp("Add", "add", a, b, 0, out) }

// Sub returns a - b. a and b must have the same shape.
func Sub(a, b *Tensor, out DType) *Tensor { return binaryOp("Sub", "sub", a, b, 0, out) }

// Mul returns the elementwise product a * b. a and b must have the same shape.
func Mul(a, b *Tensor, out DType) *Tensor { return binaryOp("Mul", "mul", a, b, 0, out) }

// Axpy returns alpha*x + y. x and y must have the same shape.
func Axpy(alpha float32, x, y *Tensor, out DType) *Tensor {
	return binaryOp("Axpy", "axpy", x, y, alpha, out)
}

// ReLUBackward returns the gradient of ReLU at x given the output gradient
// dy: dy where x > 0, else 0, and NaN where x is NaN.
func ReLUBackward(dy, x *Tensor, out DType) *Tensor {
	return binaryOp("ReLUBackward", "relu_backward", dy, x, 0, out)
}

// GELUBackward returns dy * GELU'(x), the derivative of the tanh form.
func GELUBackward(dy, x *Tensor, out DType) *Tensor {
	return binaryOp("GELUBackward", "gelu_backward", dy, x, 0, out)
}

// Scale returns s*a.
func Scale(a *Tensor, s float32, out DType) *Tensor { return unaryOp("Scale", "scale", a, s, out) }

// ReLU returns max(x, 0); NaN stays NaN.
func ReLU(x *Tensor, out DType) *Tensor { return unaryOp("ReLU", "relu", x, 0, out) }

// GELU returns 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), the tanh
// approximation of the Gaussian error linear unit.
func GELU(x *Tensor, out DType) *Tensor { return unaryOp("GELU", "gelu", x, 0, out) }

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
	checkOut(op, out)
	o := newOut(x.dev, out, x.shape, x, bias)
	launch(o, "add_bias", dtypeSpec(out, x, bias), pairs(o), []uint32{uint32(x.n), uint32(n)}, x, bias, o)
	return o
}

func binaryOp(op, kernel string, a, b *Tensor, alpha float32, out DType) *Tensor {
	sameDevice(op, a, b)
	if !slices.Equal(a.shape, b.shape) {
		shapePanic(op, a.shape, b.shape, "shapes must be equal")
	}
	checkOut(op, out)
	o := newOut(a.dev, out, a.shape, a, b)
	launch(o, kernel, dtypeSpec(out, a, b), pairs(o), []uint32{uint32(a.n), math.Float32bits(alpha)}, a, b, o)
	return o
}

func unaryOp(op, kernel string, a *Tensor, alpha float32, out DType) *Tensor {
	sameDevice(op, a)
	checkOut(op, out)
	o := newOut(a.dev, out, a.shape, a)
	launch(o, kernel, dtypeSpec(out, a), pairs(o), []uint32{uint32(a.n), math.Float32bits(alpha)}, a, o)
	return o
}

// checkOut panics unless an op can produce dtype dt. Inputs need no check:
// New accepts only dtypes every kernel reads.
func checkOut(op string, dt DType) {
	if !dt.supported() {
		panic(&DTypeError{Op: op, Got: dt, Want: "float32 or float16 output"})
	}
}

// dtypeSpec sets the dtype constants: inputs from id 1 on, the output at 3.
func dtypeSpec(out DType, in ...*Tensor) map[uint32]uint32 {
	spec := map[uint32]uint32{3: dtypeBit(out)}
	for i, t := range in {
		spec[uint32(1+i)] = dtypeBit(t.dtype)
	}
	return spec
}

// pairs is the grid of an elementwise kernel: one invocation per two
// elements, so that each fp16 output word has one writer.
func pairs(o *Tensor) [3]uint32 { return groups1D(o, (o.n+1)/2) }
