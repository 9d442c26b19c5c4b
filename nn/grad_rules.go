package nn

import (
	"math"
	"slices"

	"github.com/vkamp/vkamp/tensor"
)

// doubleRule is a backward rule made of graph ops: given a node and the
// gradient of its output as a var, it records the gradients of its inputs
// (nil where an input needs none), so that they can be differentiated in
// turn. Grad casts each to its input's dtype and checks its shape.
type doubleRule func(g *Graph, n *node, dy *Var) []*Var

// doubleRules are the differentiable backward rules, for Grad with
// createGraph: matmul and linear, the elementwise ops and activations whose
// derivatives are elementwise, sums and means, softmax, the losses, and the
// layout ops that only move elements, and exact GELU. Layer norm, GELU's
// tanh form, the poolings and convolutions have none yet.
var doubleRules map[tensor.Op]doubleRule

// noDoubleBackward are the ops with a backward rule but no differentiable
// one yet: Grad with createGraph panics, naming the op, on a path through
// them. Every op of rules is in doubleRules or here, not both
// (TestDoubleRulesTable).
var noDoubleBackward = map[tensor.Op]bool{
	// Their backward runs fused kernels, not graph ops.
	tensor.OpLayerNorm: true, tensor.OpBatchNorm: true, tensor.OpConv2d: true,
	tensor.OpMaxPool2d: true, tensor.OpAvgPool2d: true, tensor.OpAdaptiveAvgPool2d: true,
	tensor.OpAttention: true, tensor.OpNLLLoss: true, tensor.OpMaxAxes: true, tensor.OpMinAxes: true,
	// Their backward scatters into an input's shape.
	tensor.OpEmbedding: true, tensor.OpGather: true, tensor.OpConcat: true, tensor.OpStack: true,
	tensor.OpNarrow: true, tensor.OpWhere: true, tensor.OpMaskedFill: true,
	// A custom Function's Backward is the user's, in tensors.
	tensor.OpCustom: true,
}

func init() {
	doubleRules = map[tensor.Op]doubleRule{
		tensor.OpCast:         func(g *Graph, n *node, dy *Var) []*Var { return []*Var{dy} },
		tensor.OpMatMul:       matmulDouble,
		tensor.OpLinear:       linearDouble,
		tensor.OpAdd:          func(g *Graph, n *node, dy *Var) []*Var { return both(g, n, dy, dy) },
		tensor.OpSub:          func(g *Graph, n *node, dy *Var) []*Var { return both(g, n, dy, g.Neg(dy)) },
		tensor.OpMul:          mulDouble,
		tensor.OpDiv:          divDouble,
		tensor.OpAddBias:      addBiasDouble,
		tensor.OpScale:        func(g *Graph, n *node, dy *Var) []*Var { return []*Var{g.Scale(dy, n.attr.f)} },
		tensor.OpNeg:          func(g *Graph, n *node, dy *Var) []*Var { return []*Var{g.Neg(dy)} },
		tensor.OpReLU:         reluDouble,
		tensor.OpExp:          func(g *Graph, n *node, dy *Var) []*Var { return []*Var{g.Mul(dy, n.out)} },
		tensor.OpLog:          func(g *Graph, n *node, dy *Var) []*Var { return []*Var{g.Div(dy, n.inputs[0])} },
		tensor.OpSqrt:         func(g *Graph, n *node, dy *Var) []*Var { return []*Var{g.Div(g.Scale(dy, 0.5), n.out)} },
		tensor.OpRsqrt:        rsqrtDouble,
		tensor.OpTanh:         tanhDouble,
		tensor.OpSigmoid:      sigmoidDouble,
		tensor.OpSiLU:         siluDouble,
		tensor.OpMish:         mishDouble,
		tensor.OpPow:          powDouble,
		tensor.OpSum:          reduceDouble,
		tensor.OpMean:         reduceDouble,
		tensor.OpSumAxes:      sumAxesDouble,
		tensor.OpMeanAxes:     sumAxesDouble,
		tensor.OpSoftmax:      softmaxDouble,
		tensor.OpLogSoftmax:   logSoftmaxDouble,
		tensor.OpCrossEntropy: crossEntropyDouble,
		tensor.OpMSELoss:      mseDouble,
		tensor.OpDropout:      dropoutDouble,
		tensor.OpReshape:      func(g *Graph, n *node, dy *Var) []*Var { return []*Var{g.Reshape(dy, n.inputs[0].Shape()...)} },
		tensor.OpPermute:      permuteDouble,
		tensor.OpGELU:         geluDouble,
		tensor.OpCumSum:       func(g *Graph, n *node, dy *Var) []*Var { return []*Var{g.cumSum(dy, n.attr.n, !n.attr.reverse)} },
	}
}

// GELU's derivative, Phi(x) + x phi(x), as an op whose own derivative is
// phi(x) (2 - x^2): so the exact GELU differentiates twice. (The tanh form
// has no such rule.)
var geluGrad = &Function{
	Name: "gelu_grad",
	Forward: func(in []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
		x := in[0]
		ones := tensor.Full(x.Device(), tensor.Float32, 1, x.Shape()...)
		defer ones.Release()
		return tensor.GELUBackward(ones, x, x.DType()), nil
	},
	Backward: func(_, in []*tensor.Tensor, dy *tensor.Tensor) []*tensor.Tensor {
		x := in[0]
		f32 := tensor.Float32
		x2 := tensor.Mul(x, x, f32)
		defer x2.Release()
		half := tensor.Scale(x2, -0.5, f32)
		defer half.Release()
		e := tensor.Exp(half, f32)
		defer e.Release()
		two := tensor.Full(x.Device(), f32, 2, 1)
		defer two.Release()
		t := tensor.Sub(two, x2, f32)
		defer t.Release()
		et := tensor.Mul(e, t, f32)
		defer et.Release()
		d2 := tensor.Scale(et, float32(1/math.Sqrt(2*math.Pi)), f32)
		defer d2.Release()
		return []*tensor.Tensor{tensor.Mul(dy, d2, x.DType())}
	},
}

func geluDouble(g *Graph, n *node, dy *Var) []*Var {
	if n.attr.tanh {
		panic(&tensor.UsageError{Op: "Grad", Msg: "gelu's tanh form has no differentiable backward rule (createGraph); the exact form has"})
	}
	return []*Var{g.Mul(dy, g.Apply(geluGrad, n.inputs[0]))}
}

// constant returns t as a var with no gradient, owned by the graph.
func (g *Graph) constant(t *tensor.Tensor) *Var { return g.Input(g.keep(t)) }

// ones returns a constant fp32 var of ones in shape: multiplying by it
// broadcasts a gradient, and its own gradient sums back.
func (g *Graph) ones(shape ...int) *Var {
	return g.constant(tensor.Full(g.dev, tensor.Float32, 1, shape...))
}

// sumToVar sums v, a gradient at a broadcast shape, down to shape.
func sumToVar(g *Graph, v *Var, shape []int) *Var {
	vs := v.Shape()
	if slices.Equal(vs, shape) {
		return v
	}
	lead := len(vs) - len(shape)
	var axes []int
	for i := range vs {
		if i < lead || shape[i-lead] == 1 && vs[i] != 1 {
			axes = append(axes, i)
		}
	}
	if len(axes) > 0 {
		v = g.SumAxes(v, axes, true)
	}
	return g.Reshape(v, shape...)
}

// both returns the gradients ga and gb of a broadcasting binary op's
// inputs, summed to their shapes, where they are needed.
func both(g *Graph, n *node, ga, gb *Var) []*Var {
	out := make([]*Var, 2)
	for i, gr := range []*Var{ga, gb} {
		if need(n, i) {
			out[i] = sumToVar(g, gr, n.inputs[i].Shape())
		}
	}
	return out
}

func mulDouble(g *Graph, n *node, dy *Var) []*Var {
	a, b := n.inputs[0], n.inputs[1]
	var ga, gb *Var
	if need(n, 0) {
		ga = g.Mul(dy, b)
	}
	if need(n, 1) {
		gb = g.Mul(dy, a)
	}
	return both(g, n, ga, gb)
}

// d(a/b) = da/b - a db/b^2.
func divDouble(g *Graph, n *node, dy *Var) []*Var {
	a, b := n.inputs[0], n.inputs[1]
	var ga, gb *Var
	if need(n, 0) {
		ga = g.Div(dy, b)
	}
	if need(n, 1) {
		gb = g.Neg(g.Div(g.Mul(dy, a), g.Mul(b, b)))
	}
	return both(g, n, ga, gb)
}

func matmulDouble(g *Graph, n *node, dy *Var) []*Var {
	a, b := n.inputs[0], n.inputs[1]
	tA, tB := n.attr.transA, n.attr.transB
	var da, db *Var
	if need(n, 0) {
		if !tA {
			da = g.MatMul(dy, b, false, !tB)
		} else {
			da = g.MatMul(b, dy, tB, true)
		}
		da = sumToVar(g, da, a.Shape())
	}
	if need(n, 1) {
		if !tB {
			db = g.MatMul(a, dy, !tA, false)
		} else {
			db = g.MatMul(dy, a, true, tA)
		}
		db = sumToVar(g, db, b.Shape())
	}
	return []*Var{da, db}
}

// leading returns the axes of shape but the last.
func leading(shape []int) []int {
	axes := make([]int, len(shape)-1)
	for i := range axes {
		axes[i] = i
	}
	return axes
}

// y = x w^T + b: dx = dy w, dw = dy^T x over every leading row, db = the
// sum of dy over the leading axes.
func linearDouble(g *Graph, n *node, dy *Var) []*Var {
	x, w := n.inputs[0], n.inputs[1]
	out := make([]*Var, len(n.inputs))
	if need(n, 0) {
		out[0] = g.MatMul(dy, w, false, false)
	}
	if need(n, 1) {
		dy2, x2 := dy, x
		if len(x.Shape()) != 2 { // rows of every leading axis
			dy2 = g.Reshape(dy, -1, w.Shape()[0])
			x2 = g.Reshape(x, -1, w.Shape()[1])
		}
		out[1] = g.MatMul(dy2, x2, true, false)
	}
	if len(n.inputs) == 3 && need(n, 2) {
		out[2] = g.SumAxes(dy, leading(dy.Shape()), false)
	}
	return out
}

func addBiasDouble(g *Graph, n *node, dy *Var) []*Var {
	var db *Var
	if need(n, 1) {
		db = g.SumAxes(dy, leading(dy.Shape()), false)
	}
	return []*Var{dy, db}
}

// relu's derivative is a step: a constant mask, whose own derivative is 0.
func reluDouble(g *Graph, n *node, dy *Var) []*Var {
	x := n.inputs[0].t
	ones := g.keep(tensor.Full(g.dev, tensor.Float32, 1, x.Shape()...))
	return []*Var{g.Mul(dy, g.constant(tensor.ReLUBackward(ones, x, tensor.Float32)))}
}

// d/dx x^-1/2 = -y^3/2.
func rsqrtDouble(g *Graph, n *node, dy *Var) []*Var {
	return []*Var{g.Mul(dy, g.Scale(g.Pow(n.out, 3), -0.5))}
}

// d/dx tanh x = 1 - y^2.
func tanhDouble(g *Graph, n *node, dy *Var) []*Var {
	y := n.out
	return []*Var{g.Mul(dy, g.Sub(g.ones(1), g.Mul(y, y)))}
}

// d/dx sigmoid x = y (1 - y).
func sigmoidDouble(g *Graph, n *node, dy *Var) []*Var {
	y := n.out
	return []*Var{g.Mul(dy, g.Mul(y, g.Sub(g.ones(1), y)))}
}

// d/dx silu x = s (1 + x (1 - s)), s = sigmoid x, in graph ops.
func siluDouble(g *Graph, n *node, dy *Var) []*Var {
	x := n.inputs[0]
	s := g.Sigmoid(x)
	return []*Var{g.Mul(dy, g.Mul(s, g.Add(g.ones(1), g.Mul(x, g.Sub(g.ones(1), s)))))}
}

// d/dx mish x = t + x s (1 - t^2), s = sigmoid x, in graph ops, with t =
// tanh(softplus x) written s (1 + r)/(1 + r^2), r = sigmoid(-x), as the
// kernel computes it (differentiable again, and no overflow).
func mishDouble(g *Graph, n *node, dy *Var) []*Var {
	x := n.inputs[0]
	s, r := g.Sigmoid(x), g.Sigmoid(g.Neg(x))
	t := g.Div(g.Mul(s, g.Add(g.ones(1), r)), g.Add(g.ones(1), g.Mul(r, r)))
	return []*Var{g.Mul(dy, g.Add(t, g.Mul(g.Mul(x, s), g.Sub(g.ones(1), g.Mul(t, t)))))}
}

// d/dx x^p = p x^(p-1); 0 for p == 0.
func powDouble(g *Graph, n *node, dy *Var) []*Var {
	x, p := n.inputs[0], n.attr.f
	if p == 0 {
		return []*Var{g.constant(tensor.Zeros(g.dev, tensor.Float32, x.Shape()...))}
	}
	return []*Var{g.Scale(g.Mul(dy, g.Pow(x, p-1)), p)}
}

// Sum and mean spread dy over the input.
func reduceDouble(g *Graph, n *node, dy *Var) []*Var {
	x := n.inputs[0]
	d := g.Mul(dy, g.ones(x.Shape()...))
	if n.op == tensor.OpMean {
		d = g.Scale(d, 1/float32(x.t.Len()))
	}
	return []*Var{d}
}

func sumAxesDouble(g *Graph, n *node, dy *Var) []*Var {
	x := n.inputs[0]
	k := g.Reshape(dy, keptShape(x.Shape(), n.attr.axes)...)
	d := g.Mul(k, g.ones(x.Shape()...))
	if n.op == tensor.OpMeanAxes {
		d = g.Scale(d, float32(float64(k.t.Len())/float64(x.t.Len())))
	}
	return []*Var{d}
}

// dx = y (dy - sum(dy y)) along the axis.
func softmaxDouble(g *Graph, n *node, dy *Var) []*Var {
	y := n.out
	return []*Var{g.Mul(y, g.Sub(dy, g.SumAxes(g.Mul(dy, y), []int{n.attr.n}, true)))}
}

// dx = dy - exp(y) sum(dy) along the axis.
func logSoftmaxDouble(g *Graph, n *node, dy *Var) []*Var {
	y := n.out
	return []*Var{g.Sub(dy, g.Mul(g.Exp(y), g.SumAxes(dy, []int{n.attr.n}, true)))}
}

// d/dlogits = (softmax(logits) - onehot(labels)) dy, over N for the mean.
func crossEntropyDouble(g *Graph, n *node, dy *Var) []*Var {
	logits, labels := n.inputs[0], n.saved[1]
	rows, cols := lastDim(logits.t)
	classes := make([]float32, cols)
	for i := range classes {
		classes[i] = float32(i)
	}
	idx := g.keep(tensor.FromFloat32(g.dev, classes, 1, cols))
	lab := g.keep(tensor.Reshape(g.keep(tensor.Cast(labels, tensor.Float32)), rows, 1))
	onehot := g.constant(tensor.Equal(lab, idx, tensor.Float32))
	d := g.Mul(g.Sub(g.Softmax(logits, -1), onehot), dy)
	if Reduction(n.attr.n) == Mean {
		d = g.Scale(d, 1/float32(rows))
	}
	return []*Var{d}
}

// d/dpred = 2 (pred - target) dy, over N for the mean; the target's is its
// negative.
func mseDouble(g *Graph, n *node, dy *Var) []*Var {
	pred, target := n.inputs[0], n.inputs[1]
	alpha := float32(2)
	if Reduction(n.attr.n) == Mean {
		alpha /= float32(pred.t.Len())
	}
	d := g.Scale(g.Mul(g.Sub(pred, target), dy), alpha)
	out := make([]*Var, 2)
	if need(n, 0) {
		out[0] = d
	}
	if need(n, 1) {
		out[1] = g.Neg(d)
	}
	return out
}

// Dropout's derivative is its mask, scaled by 1/(1-p): the same mask, from
// the same seed, as a constant.
func dropoutDouble(g *Graph, n *node, dy *Var) []*Var {
	x := n.inputs[0].t
	ones := g.keep(tensor.Full(g.dev, tensor.Float32, 1, x.Shape()...))
	return []*Var{g.Mul(dy, g.constant(dropoutMask(ones, n.attr)))}
}

func permuteDouble(g *Graph, n *node, dy *Var) []*Var {
	perm := n.attr.ints
	back := make([]int, len(perm))
	for i, a := range perm {
		back[a] = i
	}
	return []*Var{g.Permute(dy, back...)}
}
