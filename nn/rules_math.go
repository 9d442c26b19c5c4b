package nn

import (
	"slices"

	"github.com/vkamp/vkamp/tensor"
)

// Backward rules of the math ops (ops_math.go) and of the broadcasting
// Add, Sub and Mul. A gradient computed at the broadcast output's shape is
// summed back to its input's shape (tensor.SumTo) and cast to its dtype.

// gradDT is the dtype to compute a gradient of in in: in's own when no
// sum follows, else fp32 for the sum.
func gradDT(full []int, in *Var) tensor.DType {
	if slices.Equal(full, in.Shape()) {
		return in.DType()
	}
	return tensor.Float32
}

// toInput returns the gradient full, at the broadcast shape, for input in:
// summed to in's shape and cast to its dtype; full itself when it fits.
func toInput(g *Graph, full *tensor.Tensor, in *Var) *tensor.Tensor {
	if !slices.Equal(full.Shape(), in.Shape()) {
		full = g.keep(tensor.SumTo(full, in.Shape()...))
	}
	if full.DType() != in.DType() {
		return tensor.Cast(full, in.DType())
	}
	return full
}

func addBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	grads := make([]*tensor.Tensor, 2)
	for i, in := range n.inputs {
		if need(n, i) {
			grads[i] = toInput(g, dy, in)
		}
	}
	return grads
}

func subBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	var da, db *tensor.Tensor
	a, b := n.inputs[0], n.inputs[1]
	if need(n, 0) {
		da = toInput(g, dy, a)
	}
	if need(n, 1) {
		s := dy
		if !slices.Equal(dy.Shape(), b.Shape()) {
			s = g.keep(tensor.SumTo(dy, b.Shape()...))
		}
		db = tensor.Neg(s, b.DType())
	}
	return []*tensor.Tensor{da, db}
}

func mulBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	a, b := n.inputs[0], n.inputs[1]
	var da, db *tensor.Tensor
	if need(n, 0) {
		da = toInput(g, g.keep(tensor.Mul(dy, b.t, gradDT(dy.Shape(), a))), a)
	}
	if need(n, 1) {
		db = toInput(g, g.keep(tensor.Mul(dy, a.t, gradDT(dy.Shape(), b))), b)
	}
	return []*tensor.Tensor{da, db}
}

// y = a/b: da = dy/b, db = -dy a/b^2 = -(dy/b) a/b.
func divBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	a, b := n.inputs[0], n.inputs[1]
	f32 := tensor.Float32
	q := g.keep(tensor.Div(dy, b.t, f32))
	var da, db *tensor.Tensor
	if need(n, 0) {
		da = toInput(g, q, a)
	}
	if need(n, 1) {
		s := g.keep(tensor.Div(g.keep(tensor.Mul(q, a.t, f32)), b.t, f32))
		if !slices.Equal(s.Shape(), b.Shape()) {
			s = g.keep(tensor.SumTo(s, b.Shape()...))
		}
		db = tensor.Neg(s, b.DType())
	}
	return []*tensor.Tensor{da, db}
}

func negBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	return []*tensor.Tensor{tensor.Neg(dy, n.inputs[0].DType())}
}

// d/dx ln x = 1/x.
func logBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	x := n.inputs[0].t
	return []*tensor.Tensor{tensor.Div(dy, x, x.DType())}
}

// d/dx sqrt x = 1/(2 sqrt x), from the output.
func sqrtBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	half := g.keep(tensor.Scale(dy, 0.5, tensor.Float32))
	return []*tensor.Tensor{tensor.Div(half, n.out.t, n.inputs[0].DType())}
}

// d/dx x^-1/2 = -x^-3/2/2 = -y^3/2, as PyTorch's.
func rsqrtBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	y3 := g.keep(tensor.Pow(n.out.t, 3, tensor.Float32))
	return []*tensor.Tensor{tensor.Scale(g.keep(tensor.Mul(dy, y3, tensor.Float32)), -0.5, n.inputs[0].DType())}
}

// one is a one-element fp32 tensor holding 1, for 1 - y.
func one(g *Graph) *tensor.Tensor { return g.keep(tensor.Full(g.dev, tensor.Float32, 1, 1)) }

// d/dx tanh x = 1 - y^2.
func tanhBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	y := n.out.t
	s := g.keep(tensor.Sub(one(g), g.keep(tensor.Mul(y, y, tensor.Float32)), tensor.Float32))
	return []*tensor.Tensor{tensor.Mul(dy, s, n.inputs[0].DType())}
}

// d/dx sigmoid x = y (1 - y).
func sigmoidBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	y := n.out.t
	s := g.keep(tensor.Mul(y, g.keep(tensor.Sub(one(g), y, tensor.Float32)), tensor.Float32))
	return []*tensor.Tensor{tensor.Mul(dy, s, n.inputs[0].DType())}
}

// d/dx silu x = s (1 + x (1 - s)), s = sigmoid x: one kernel.
func siluBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	x := n.inputs[0]
	return []*tensor.Tensor{tensor.SiLUBackward(dy, x.t, x.DType())}
}

// d/dx mish x = t + x s (1 - t^2), t = tanh(softplus x), s = sigmoid x:
// one kernel.
func mishBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	x := n.inputs[0]
	return []*tensor.Tensor{tensor.MishBackward(dy, x.t, x.DType())}
}

// d/dx x^p = p x^(p-1); 0 for p == 0 (PyTorch's rule, which avoids 0 *
// inf at x = 0).
func powBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	x, p := n.inputs[0].t, n.attr.f
	if p == 0 {
		return []*tensor.Tensor{tensor.Zeros(g.dev, x.DType(), x.Shape()...)}
	}
	t := g.keep(tensor.Pow(x, p-1, tensor.Float32))
	return []*tensor.Tensor{tensor.Scale(g.keep(tensor.Mul(dy, t, tensor.Float32)), p, x.DType())}
}

// The gradient of where goes to a where cond is set and to b elsewhere.
func whereBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	cond := n.saved[0]
	zero := g.keep(tensor.Zeros(g.dev, tensor.Float32, 1))
	grads := make([]*tensor.Tensor, 2)
	for i, in := range n.inputs {
		if !need(n, i) {
			continue
		}
		a, b := dy, zero
		if i == 1 {
			a, b = zero, dy
		}
		grads[i] = toInput(g, g.keep(tensor.Where(cond, a, b, gradDT(dy.Shape(), in))), in)
	}
	return grads
}

// The gradient of masked_fill is dy with 0 where the mask is set.
func maskedFillBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	return []*tensor.Tensor{toInput(g, g.keep(tensor.MaskedFill(dy, n.saved[0], 0)), n.inputs[0])}
}

// keptShape is shape with the reduced axes (nil: all) set to 1, the shape of
// a reduction's output with keepdim. The axes were checked by the forward.
func keptShape(shape, axes []int) []int {
	s := slices.Clone(shape)
	if len(axes) == 0 {
		for i := range s {
			s[i] = 1
		}
	}
	for _, a := range axes {
		s[(a+len(s))%len(s)] = 1
	}
	return s
}

// kept returns t, a reduction's output or its gradient, in the keepdim
// shape of node n's input, so that it broadcasts against the input.
func kept(g *Graph, n *node, t *tensor.Tensor) *tensor.Tensor {
	s := keptShape(n.inputs[0].Shape(), n.attr.axes)
	if slices.Equal(t.Shape(), s) {
		return t
	}
	return g.keep(tensor.Reshape(t, s...))
}

// Sum and mean over axes spread dy over the reduced axes (divided by their
// length for mean).
func sumAxesBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	x := n.inputs[0]
	d := kept(g, n, dy)
	if n.op == tensor.OpMeanAxes {
		d = g.keep(tensor.Scale(d, float32(float64(d.Len())/float64(x.t.Len())), tensor.Float32))
	}
	return []*tensor.Tensor{tensor.Expand(d, x.DType(), x.Shape()...)}
}

// amax and amin give the gradient to the elements equal to the result,
// split evenly between ties, as PyTorch's amax/amin backward:
// dx = (x == y) * dy / count(x == y). A NaN result gives NaN gradients.
func extremeBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	x := n.inputs[0]
	f32 := tensor.Float32
	mask := g.keep(tensor.Equal(x.t, kept(g, n, n.out.t), f32))
	count := g.keep(tensor.SumAxes(mask, n.attr.axes, true))
	share := g.keep(tensor.Div(kept(g, n, dy), count, f32))
	return []*tensor.Tensor{tensor.Mul(mask, share, x.DType())}
}

// The gradient of a cumsum is dy summed from the other end of the axis
// (dx_j = dy_j + ... + dy_last), and the reverse's gradient a cumsum.
func cumSumBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	f := tensor.CumSumReverse
	if n.attr.reverse {
		f = tensor.CumSum
	}
	return []*tensor.Tensor{f(dy, n.attr.n, n.inputs[0].DType())}
}
