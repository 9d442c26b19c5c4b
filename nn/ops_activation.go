package nn

import (
	"fmt"
	"math"
	"slices"

	"github.com/vkamp/vkamp/tensor"
)

// Activations and elementwise extremes composed from the graph's existing
// ops (no kernels of their own): each records the nodes of its parts, so
// Backward (and, where every part has one, Grad with createGraph) uses the
// parts' rules. Their gradients follow PyTorch's conventions, at the kinks
// included. Under autocast they run in their input's dtype, as PyTorch's
// (on none of its autocast lists): each asks the policy of the part that
// decides its arithmetic (ReLU, Sigmoid, Where, Stack, Tanh: all Keep).
// Softplus, on PyTorch's fp32 list, asks Log's policy (fp32).
//
// Each begins with g.use and records its parts through the unguarded
// helpers below, so that without gradients done releases the parts'
// outputs, keeping only the result.

// Parts: each records one node on inputs already in their dtype.

func (g *Graph) partReLU(x *Var) *Var {
	return g.record(tensor.OpReLU, tensor.ReLU(x.t, x.DType()), attrs{}, nil, x)
}

func (g *Graph) partNeg(x *Var) *Var {
	return g.record(tensor.OpNeg, tensor.Neg(x.t, x.DType()), attrs{}, nil, x)
}

func (g *Graph) partScale(x *Var, s float32) *Var {
	return g.record(tensor.OpScale, tensor.Scale(x.t, s, x.DType()), attrs{f: s}, nil, x)
}

func (g *Graph) partExp(x *Var) *Var {
	return g.record(tensor.OpExp, tensor.Exp(x.t, x.DType()), attrs{}, nil, x)
}

func (g *Graph) partAdd(a, b *Var) *Var {
	return g.record(tensor.OpAdd, tensor.Add(a.t, b.t, a.DType()), attrs{}, nil, a, b)
}

func (g *Graph) partSub(a, b *Var) *Var {
	return g.record(tensor.OpSub, tensor.Sub(a.t, b.t, a.DType()), attrs{}, nil, a, b)
}

// partWhere records Where with cond, which the graph keeps.
func (g *Graph) partWhere(cond *tensor.Tensor, a, b *Var) *Var {
	return g.record(tensor.OpWhere, tensor.Where(cond, a.t, b.t, a.DType()), attrs{}, []*tensor.Tensor{cond}, a, b)
}

// scalar returns a [1] var holding v in dtype dt, which the graph keeps.
func (g *Graph) scalar(v float32, dt tensor.DType) *Var {
	return g.newVar(g.keep(tensor.Full(g.dev, dt, v, 1)))
}

// nonneg returns an Int32 mask, 1 where d >= 0 and 0 where d < 0 or is
// NaN (relu(d) == d exactly there), kept by the graph as d is.
func (g *Graph) nonneg(d *tensor.Tensor) *tensor.Tensor {
	g.keep(d)
	r := g.keep(tensor.ReLU(d, d.DType()))
	e := g.keep(tensor.Equal(r, d, tensor.Float32))
	return g.keep(tensor.Cast(e, tensor.Int32))
}

// SiLU returns x * sigmoid(x) (PyTorch's torch.nn.functional.silu), in x's
// dtype under autocast, rounded once.
func (g *Graph) SiLU(x *Var) *Var {
	defer g.use("SiLU").done()
	return g.unaryMath("SiLU", tensor.OpSiLU, x, tensor.SiLU, attrs{})
}

// LeakyReLU returns x where x > 0 and negativeSlope * x elsewhere
// (PyTorch's torch.nn.functional.leaky_relu(x, negative_slope)), in x's
// dtype, composed as relu(x) + negativeSlope*(x - relu(x)), which gives
// each value exactly. The gradient is 1 where x > 0 and negativeSlope
// elsewhere, x == 0 included, as PyTorch's.
func (g *Graph) LeakyReLU(x *Var, negativeSlope float32) *Var {
	defer g.use("LeakyReLU").done()
	floats("LeakyReLU", x)
	x = g.cast(x, g.dtypeFor(tensor.OpReLU, x))
	r := g.partReLU(x)
	return g.partAdd(r, g.partScale(g.partSub(x, r), negativeSlope))
}

// Abs returns |x| (PyTorch's torch.abs), in x's dtype, composed as
// relu(x) + relu(-x). The gradient is the sign of x, 0 at x == 0, as
// PyTorch's.
func (g *Graph) Abs(x *Var) *Var {
	defer g.use("Abs").done()
	floats("Abs", x)
	x = g.cast(x, g.dtypeFor(tensor.OpReLU, x))
	return g.partAdd(g.partReLU(x), g.partReLU(g.partNeg(x)))
}

// ELU returns x where x > 0 and alpha*(e^x - 1) elsewhere (PyTorch's
// torch.nn.functional.elu(x, alpha)), in x's dtype (the exponential too,
// as PyTorch's elu, which is on no autocast list), composed as relu(x) +
// alpha*(e^min(x,0) - 1). The gradient is 1 where x > 0 and alpha*e^x
// elsewhere, as PyTorch's. e^x - 1 is not expm1: for |x| near 0 its
// relative error is that of e^x's rounding over |x|.
func (g *Graph) ELU(x *Var, alpha float32) *Var {
	defer g.use("ELU").done()
	floats("ELU", x)
	x = g.cast(x, g.dtypeFor(tensor.OpReLU, x))
	r := g.partReLU(x)
	e := g.partExp(g.partSub(x, r)) // e^min(x, 0)
	em1 := g.partSub(e, g.scalar(1, x.DType()))
	return g.partAdd(r, g.partScale(em1, alpha))
}

// Clamp returns x limited to [lo, hi] (PyTorch's torch.clamp(x, min,
// max)), in x's dtype; ±Inf leaves a side open. The gradient passes where
// lo <= x <= hi, bounds included, and is 0 elsewhere, as PyTorch's. x is
// compared with lo and hi as float32, as PyTorch compares a 16-bit tensor
// with its scalar bounds; the bounds written out are rounded to x's dtype.
// A NaN x stays NaN, as in PyTorch; unlike PyTorch, lo > hi or a NaN
// bound panics with a *tensor.UsageError. It is not twice differentiable
// (Where has no double-backward rule).
func (g *Graph) Clamp(x *Var, lo, hi float32) *Var {
	defer g.use("Clamp").done()
	floats("Clamp", x)
	if !(lo <= hi) {
		panic(&tensor.UsageError{Op: "Clamp", Msg: fmt.Sprintf("min %g is not at most max %g", lo, hi)})
	}
	x = g.cast(x, g.dtypeFor(tensor.OpWhere, x))
	dt := x.DType()
	y := x
	if !math.IsInf(float64(lo), -1) {
		lo32 := g.keep(tensor.Full(g.dev, tensor.Float32, lo, 1))
		ge := g.nonneg(tensor.Sub(x.t, lo32, tensor.Float32)) // x >= lo
		y = g.partWhere(ge, y, g.scalar(lo, dt))
	}
	if !math.IsInf(float64(hi), 1) {
		hi32 := g.keep(tensor.Full(g.dev, tensor.Float32, hi, 1))
		le := g.nonneg(tensor.Sub(hi32, x.t, tensor.Float32)) // x <= hi
		y = g.partWhere(le, y, g.scalar(hi, dt))
	}
	if y == x { // (-Inf, +Inf): a node all the same, as PyTorch's clamp makes a new tensor
		return g.partScale(x, 1)
	}
	// NaN stays NaN, as in PyTorch (the masks above read it as out of
	// range): a clamp must not hide an overflow from the scaler.
	notNaN := g.keep(tensor.Cast(g.keep(tensor.Equal(x.t, x.t, tensor.Float32)), tensor.Int32))
	return g.partWhere(notNaN, y, x)
}

// Maximum returns the elementwise maximum of a and b (PyTorch's
// torch.maximum), broadcasting as Add, in the wider dtype. Where a == b
// the gradient is split evenly, half to each, as PyTorch's. It is
// composed as MaxAxes over the two stacked (broadcast first where their
// shapes differ), so it is not twice differentiable.
func (g *Graph) Maximum(a, b *Var) *Var {
	defer g.use("Maximum").done()
	return g.extreme("Maximum", tensor.OpMaxAxes, a, b, tensor.MaxAxes)
}

// Minimum returns the elementwise minimum of a and b (PyTorch's
// torch.minimum), as Maximum.
func (g *Graph) Minimum(a, b *Var) *Var {
	defer g.use("Minimum").done()
	return g.extreme("Minimum", tensor.OpMinAxes, a, b, tensor.MinAxes)
}

// extreme records Maximum or Minimum: a and b in their promoted dtype,
// broadcast to one shape by adding zeros, stacked, reduced over the new
// axis (in fp32) and cast back.
func (g *Graph) extreme(name string, op tensor.Op, a, b *Var, f func(*tensor.Tensor, []int, bool) *tensor.Tensor) *Var {
	floats(name, a, b)
	dt := g.dtypeFor(tensor.OpStack, a, b)
	a, b = g.cast(a, dt), g.cast(b, dt)
	shape, ok := tensor.BroadcastShape(a.Shape(), b.Shape())
	if !ok {
		panic(&tensor.ShapeError{Op: name, A: a.Shape(), B: b.Shape(), Msg: "the shapes do not broadcast"})
	}
	var zeros *Var
	expand := func(v *Var) *Var {
		if slices.Equal(v.Shape(), shape) {
			return v
		}
		if zeros == nil {
			zeros = g.newVar(g.keep(tensor.Zeros(g.dev, dt, shape...)))
		}
		return g.partAdd(v, zeros)
	}
	a, b = expand(a), expand(b)
	s := g.join(tensor.OpStack, 0, []*Var{a, b}, tensor.Stack)
	m := g.reduceAxes(name, op, s, []int{0}, false, f)
	return g.cast(m, dt)
}

func (g *Graph) partLog(x *Var) *Var {
	return g.record(tensor.OpLog, tensor.Log(x.t, x.DType()), attrs{}, nil, x)
}

// Softplus returns log(1 + e^(beta x))/beta, and x where beta*x >
// threshold (PyTorch's torch.nn.functional.softplus(x, beta, threshold);
// its defaults are beta 1, threshold 20), in fp32 under autocast, as
// PyTorch's (softplus is on its fp32 list). The gradient is
// sigmoid(beta x), and 1 where beta*x > threshold, as PyTorch's. It is
// composed as log(1 + e^z), not log1p: for beta*x below about -17 (fp32)
// the result is 0 where PyTorch's is e^(beta x), an absolute error under
// 4e-8/beta; the gradient there keeps its relative accuracy. The linear
// side's inputs are not exponentiated, so a threshold up to 88/beta-ish
// (fp32) has no overflow. Not twice differentiable (Where has no
// double-backward rule); beta must be positive and finite (else a
// *tensor.UsageError).
func (g *Graph) Softplus(x *Var, beta, threshold float32) *Var {
	defer g.use("Softplus").done()
	floats("Softplus", x)
	if !(beta > 0) || math.IsInf(float64(beta), 1) {
		panic(&tensor.UsageError{Op: "Softplus", Msg: fmt.Sprintf("beta %g is not positive and finite", beta)})
	}
	x = g.cast(x, g.dtypeFor(tensor.OpLog, x))
	return g.softplus(x, beta, threshold)
}

// softplus records Softplus's parts in x's dtype.
func (g *Graph) softplus(x *Var, beta, threshold float32) *Var {
	dt := x.DType()
	z := x
	if beta != 1 {
		z = g.partScale(x, beta)
	}
	thr := g.keep(tensor.Full(g.dev, tensor.Float32, threshold, 1))
	le := g.nonneg(tensor.Sub(thr, z.t, tensor.Float32)) // beta x <= threshold
	// e^z only where z <= threshold: elsewhere e^0, so that the linear
	// side's gradient (0 through Where) meets no e^z = inf.
	zc := g.partWhere(le, z, g.scalar(0, dt))
	sp := g.partLog(g.partAdd(g.partExp(zc), g.scalar(1, dt)))
	if beta != 1 {
		sp = g.partScale(sp, 1/beta)
	}
	return g.partWhere(le, sp, x)
}

// Mish returns x * tanh(softplus(x)) (PyTorch's
// torch.nn.functional.mish), in x's dtype under autocast (PyTorch's mish
// is on no autocast list), computed in fp32 and rounded once. The gradient
// is PyTorch's (tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2)), and
// differentiable again.
func (g *Graph) Mish(x *Var) *Var {
	defer g.use("Mish").done()
	return g.unaryMath("Mish", tensor.OpMish, x, tensor.Mish, attrs{})
}
