package nn

import (
	"github.com/vkamp/vkamp/tensor"
)

// The graph's elementwise math and reductions over axes. Add, Sub and Mul
// (ops.go), Div and Where broadcast as PyTorch does (tensor.BroadcastShape);
// their gradients are summed back to each input's shape. The reductions
// return fp32 whatever the input dtype, as Sum and Mean do.

// floats panics with a *tensor.DTypeError naming op when a var is not of
// a floating dtype (autocast's dtype choice would name itself instead).
func floats(op string, vs ...*Var) {
	for _, v := range vs {
		if dt := v.DType(); dt != tensor.Float32 && dt != tensor.Float16 && dt != tensor.BFloat16 {
			panic(&tensor.DTypeError{Op: op, Got: dt, Want: "float32, float16 or bfloat16"})
		}
	}
}

// Div returns a / b, broadcasting, in the wider dtype.
func (g *Graph) Div(a, b *Var) *Var {
	defer g.use("Div").done()
	floats("Div", a, b)
	return g.binary(tensor.OpDiv, a, b, tensor.Div)
}

// unaryMath casts x by op's policy, applies f and records the node.
func (g *Graph) unaryMath(name string, op tensor.Op, x *Var, f func(x *tensor.Tensor, dt tensor.DType) *tensor.Tensor, a attrs) *Var {
	floats(name, x)
	x = g.cast(x, g.dtypeFor(op, x))
	return g.record(op, f(x.t, x.DType()), a, nil, x)
}

// Neg returns -x.
func (g *Graph) Neg(x *Var) *Var {
	defer g.use("Neg").done()
	return g.unaryMath("Neg", tensor.OpNeg, x, tensor.Neg, attrs{})
}

// Log returns the natural logarithm of x, in fp32 under autocast.
func (g *Graph) Log(x *Var) *Var {
	defer g.use("Log").done()
	return g.unaryMath("Log", tensor.OpLog, x, tensor.Log, attrs{})
}

// Sqrt returns the square root of x.
func (g *Graph) Sqrt(x *Var) *Var {
	defer g.use("Sqrt").done()
	return g.unaryMath("Sqrt", tensor.OpSqrt, x, tensor.Sqrt, attrs{})
}

// Rsqrt returns 1/sqrt(x), in fp32 under autocast.
func (g *Graph) Rsqrt(x *Var) *Var {
	defer g.use("Rsqrt").done()
	return g.unaryMath("Rsqrt", tensor.OpRsqrt, x, tensor.Rsqrt, attrs{})
}

// Tanh returns the hyperbolic tangent of x.
func (g *Graph) Tanh(x *Var) *Var {
	defer g.use("Tanh").done()
	return g.unaryMath("Tanh", tensor.OpTanh, x, tensor.Tanh, attrs{})
}

// Sigmoid returns 1/(1 + e^-x).
func (g *Graph) Sigmoid(x *Var) *Var {
	defer g.use("Sigmoid").done()
	return g.unaryMath("Sigmoid", tensor.OpSigmoid, x, tensor.Sigmoid, attrs{})
}

// Pow returns x^p (tensor.Pow's specials), in fp32 under autocast. Its
// gradient is p x^(p-1), and 0 for p == 0, as PyTorch's.
func (g *Graph) Pow(x *Var, p float32) *Var {
	defer g.use("Pow").done()
	return g.unaryMath("Pow", tensor.OpPow, x, func(x *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
		return tensor.Pow(x, p, dt)
	}, attrs{f: p})
}

// Where returns a where cond (an Int32 tensor, not differentiated) is
// nonzero and b elsewhere, cond, a and b broadcasting together. The graph
// does not take ownership of cond, which must live until Backward has run.
func (g *Graph) Where(cond *tensor.Tensor, a, b *Var) *Var {
	defer g.use("Where").done()
	floats("Where", a, b)
	dt := g.dtypeFor(tensor.OpWhere, a, b)
	a, b = g.cast(a, dt), g.cast(b, dt)
	return g.record(tensor.OpWhere, tensor.Where(cond, a.t, b.t, dt), attrs{}, []*tensor.Tensor{cond}, a, b)
}

// MaskedFill returns x with v where mask (an Int32 tensor broadcasting to
// x's shape, not differentiated) is nonzero. The gradient is 0 there. The
// graph does not take ownership of mask, which must live until Backward.
func (g *Graph) MaskedFill(x *Var, mask *tensor.Tensor, v float32) *Var {
	defer g.use("MaskedFill").done()
	floats("MaskedFill", x)
	x = g.cast(x, g.dtypeFor(tensor.OpMaskedFill, x))
	return g.record(tensor.OpMaskedFill, tensor.MaskedFill(x.t, mask, v), attrs{f: v}, []*tensor.Tensor{mask}, x)
}

// reduceAxes records one of the reductions over axes.
func (g *Graph) reduceAxes(name string, op tensor.Op, x *Var, axes []int, keepdim bool, f func(*tensor.Tensor, []int, bool) *tensor.Tensor) *Var {
	floats(name, x)
	x = g.cast(x, g.dtypeFor(op, x))
	axes = append([]int(nil), axes...)
	return g.record(op, f(x.t, axes, keepdim), attrs{axes: axes, keepdim: keepdim}, nil, x)
}

// SumAxes returns the sum of x over axes (nil: all), as torch.sum(x, dim,
// keepdim), in fp32. Axes follow tensor.SumAxes.
func (g *Graph) SumAxes(x *Var, axes []int, keepdim bool) *Var {
	defer g.use("SumAxes").done()
	return g.reduceAxes("SumAxes", tensor.OpSumAxes, x, axes, keepdim, tensor.SumAxes)
}

// MeanAxes returns the mean of x over axes, in fp32.
func (g *Graph) MeanAxes(x *Var, axes []int, keepdim bool) *Var {
	defer g.use("MeanAxes").done()
	return g.reduceAxes("MeanAxes", tensor.OpMeanAxes, x, axes, keepdim, tensor.MeanAxes)
}

// MaxAxes returns the maximum of x over axes (torch.amax), in fp32. The
// gradient goes to the elements equal to the maximum, split evenly between
// ties, as PyTorch's amax (max with a dim instead gives it all to one).
func (g *Graph) MaxAxes(x *Var, axes []int, keepdim bool) *Var {
	defer g.use("MaxAxes").done()
	return g.reduceAxes("MaxAxes", tensor.OpMaxAxes, x, axes, keepdim, tensor.MaxAxes)
}

// MinAxes returns the minimum of x over axes (torch.amin), in fp32, with
// the gradient split evenly between ties as MaxAxes's.
func (g *Graph) MinAxes(x *Var, axes []int, keepdim bool) *Var {
	defer g.use("MinAxes").done()
	return g.reduceAxes("MinAxes", tensor.OpMinAxes, x, axes, keepdim, tensor.MinAxes)
}

// CumSum returns the inclusive prefix sums of x along axis, as
// torch.cumsum(x, dim): each accumulated in fp32 (tensor.CumSum), in fp32
// under autocast (cumsum is on PyTorch's fp32 list), else in x's dtype. A
// negative axis counts from the end. Its gradient is dy summed from the
// other end of the axis, itself differentiable (Grad with createGraph).
func (g *Graph) CumSum(x *Var, axis int) *Var { return g.cumSum(x, axis, false) }

// cumSum records CumSum, or with reverse the sums from the end of the
// axis: CumSum's gradient, and the gradient of that.
func (g *Graph) cumSum(x *Var, axis int, reverse bool) *Var {
	defer g.use("CumSum").done()
	floats("CumSum", x)
	x = g.cast(x, g.dtypeFor(tensor.OpCumSum, x))
	f := tensor.CumSum
	if reverse {
		f = tensor.CumSumReverse
	}
	y := f(x.t, axis, x.DType())
	return g.record(tensor.OpCumSum, y, attrs{n: normAxis(axis, len(x.Shape())), reverse: reverse}, nil, x)
}
