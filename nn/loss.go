package nn

import (
	"fmt"

	"github.com/vkamp/vkamp/tensor"
)

// Reduction is how a loss combines its per-sample values.
type Reduction int

const (
	Mean Reduction = iota // the mean over samples
	Sum                   // the sum over samples
)

// checkReduction panics unless r is Mean or Sum: the forward pass and the
// backward rule must agree on it.
func checkReduction(op string, r Reduction) {
	if r != Mean && r != Sum {
		panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("reduction %d is neither Mean nor Sum", r)})
	}
}

// fp32Only is dtypeFor for the ops whose kernels exist in fp32 only
// (layer_norm and the losses). Under autocast the policy's choice is taken
// and must be fp32: a table edited to lower one of these panics here
// rather than feed fp16 to an fp32 kernel. Without autocast fp16 inputs are
// widened too (PyTorch would run fp16), as there is no fp16 kernel.
func (g *Graph) fp32Only(op tensor.Op, vs ...*Var) tensor.DType {
	if !g.amp.Enabled() {
		return tensor.Float32
	}
	dt := g.dtypeFor(op, vs...)
	if dt != tensor.Float32 {
		panic(&tensor.DTypeError{Op: op.String(), Got: dt, Want: "float32 (the autocast policy chose a dtype this op has no kernel for)"})
	}
	return dt
}

// MSELoss returns the mean (or sum) of (pred - target)^2 over all elements,
// computed in fp32 whatever the inputs, as the autocast policy says.
func (g *Graph) MSELoss(pred, target *Var, r Reduction) *Var {
	defer g.use("MSELoss").done()
	checkReduction("MSELoss", r)
	sameShape("MSELoss", pred.t, target.t)
	dt := g.fp32Only(tensor.OpMSELoss, pred, target)
	pred, target = g.cast(pred, dt), g.cast(target, dt)
	diff := g.keep(tensor.Sub(pred.t, target.t, dt))
	sq := g.keep(tensor.Mul(diff, diff, dt))
	var out *tensor.Tensor
	if r == Sum {
		out = tensor.Sum(sq)
	} else {
		out = tensor.Mean(sq)
	}
	return g.record(tensor.OpMSELoss, out, attrs{n: int(r)}, []*tensor.Tensor{diff}, pred, target)
}

// d/dpred = 2 (pred - target) / N for the mean, without the 1/N for the sum.
func mseBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	diff := n.saved[0]
	alpha := float32(2)
	if Reduction(n.attr.n) == Mean {
		alpha /= float32(diff.Len())
	}
	var dp, dt *tensor.Tensor
	if need(n, 0) {
		dp = tensor.ScaleByItem(diff, dy, alpha, tensor.Float32)
	}
	if need(n, 1) {
		dt = tensor.ScaleByItem(diff, dy, -alpha, tensor.Float32)
	}
	return []*tensor.Tensor{dp, dt}
}

// CrossEntropyLoss returns the cross-entropy of logits [N, C] against class
// labels [N], Int32 class indices (labels of another dtype panic with a
// *tensor.DTypeError), from the log-softmax and the negative log-likelihood
// fused, in fp32 (the autocast policy's dtype). A label outside [0, C)
// poisons the step, as PyTorch's device-side assert does, without a wait:
// the loss and that row's gradient are NaN, so a step through a gradient
// scaler skips; a plain optimizer Step skips too, as does every plain step
// until a read reports it; and the next read of any tensor on the device
// returns a *tensor.AssertError naming the row and the label, which matches
// tensor.ErrBadTarget.
func (g *Graph) CrossEntropyLoss(logits *Var, labels *tensor.Tensor, r Reduction) *Var {
	defer g.use("CrossEntropyLoss").done()
	checkReduction("CrossEntropyLoss", r)
	s := logits.Shape()
	if len(s) != 2 || labels.Len() != s[0] {
		panic(&tensor.ShapeError{Op: "CrossEntropyLoss", A: s, B: labels.Shape(), Msg: "want logits [N, C] and labels [N]"})
	}
	if labels.DType() != tensor.Int32 {
		panic(&tensor.DTypeError{Op: "CrossEntropyLoss", Got: labels.DType(), Want: "int32 class indices as labels"})
	}
	if dt := g.fp32Only(tensor.OpCrossEntropy, logits); !widensExactly(dt, logits, logits) {
		logits = g.cast(logits, dt)
	}
	// fp16 or bf16 logits are widened exactly by LogSoftmax as it reads
	// them, and their gradient is rounded once by CrossEntropyBackwardAs:
	// the cast each way is left out (two kernels of an AMP step).
	logp := g.keep(tensor.LogSoftmax(logits.t))
	losses := g.keep(tensor.NLL(logp, labels))
	var out *tensor.Tensor
	if r == Sum {
		out = tensor.Sum(losses)
	} else {
		out = tensor.Mean(losses)
	}
	return g.record(tensor.OpCrossEntropy, out, attrs{n: int(r)}, []*tensor.Tensor{logp, labels}, logits)
}

func crossEntropyBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	logp, labels := n.saved[0], n.saved[1]
	rows, _ := lastDim(logp)
	alpha := float32(1)
	if Reduction(n.attr.n) == Mean {
		alpha /= float32(rows)
	}
	return []*tensor.Tensor{tensor.CrossEntropyBackwardAs(logp, labels, dy, alpha, n.inputs[0].DType())}
}

// LayerNorm normalises x over its last axis and applies gamma and beta (each
// [C]), in fp32 (the autocast policy's dtype). beta may be nil, for a layer
// without bias.
func (g *Graph) LayerNorm(x, gamma, beta *Var, eps float32) *Var {
	defer g.use("LayerNorm").done()
	_, cols := lastDim(x.t)
	if gamma.t.Len() != cols || (beta != nil && beta.t.Len() != cols) {
		panic(&tensor.ShapeError{Op: "LayerNorm", A: x.Shape(), B: gamma.Shape(), Msg: "gamma and beta must match the last axis"})
	}
	if beta == nil {
		dt := g.fp32Only(tensor.OpLayerNorm, x, gamma)
		x, gamma = g.cast(x, dt), g.cast(gamma, dt)
		y, stats := tensor.LayerNorm(x.t, gamma.t, nil, eps)
		g.keep(stats)
		return g.record(tensor.OpLayerNorm, y, attrs{}, []*tensor.Tensor{stats}, x, gamma)
	}
	dt := g.fp32Only(tensor.OpLayerNorm, x, gamma, beta)
	x, gamma, beta = g.cast(x, dt), g.cast(gamma, dt), g.cast(beta, dt)
	y, stats := tensor.LayerNorm(x.t, gamma.t, beta.t, eps)
	g.keep(stats)
	return g.record(tensor.OpLayerNorm, y, attrs{}, []*tensor.Tensor{stats}, x, gamma, beta)
}

// Without beta (two inputs) there is no beta gradient to compute.
func layerNormBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	if len(n.inputs) == 2 {
		dx, dgamma := tensor.LayerNormBackwardNoBias(dy, n.inputs[0].t, n.inputs[1].t, n.saved[0])
		return []*tensor.Tensor{dx, dgamma}
	}
	dx, dgamma, dbeta := tensor.LayerNormBackward(dy, n.inputs[0].t, n.inputs[1].t, n.saved[0])
	return []*tensor.Tensor{dx, dgamma, dbeta}
}
