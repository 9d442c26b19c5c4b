package nn

import (
	"github.com/vkamp/vkamp/tensor"
)

// NLLLoss returns the negative log-likelihood of log-probabilities logp
// [N, C] (as LogSoftmax gives them) at the class labels [N], Int32 class
// indices, averaged over the rows (Mean) or summed (Sum), in fp32 (the
// autocast policy's dtype, PyTorch's for nll_loss). NLLLoss(LogSoftmax(x))
// is CrossEntropyLoss(x). Labels of another dtype panic with a
// *tensor.DTypeError, shapes that do not fit with a *tensor.ShapeError; a
// label outside [0, C) poisons the step as CrossEntropyLoss says.
func (g *Graph) NLLLoss(logp *Var, labels *tensor.Tensor, r Reduction) *Var {
	defer g.use("NLLLoss").done()
	checkReduction("NLLLoss", r)
	s := logp.Shape()
	if len(s) != 2 || labels.Len() != s[0] {
		panic(&tensor.ShapeError{Op: "NLLLoss", A: s, B: labels.Shape(), Msg: "want log-probabilities [N, C] and labels [N]"})
	}
	if labels.DType() != tensor.Int32 {
		panic(&tensor.DTypeError{Op: "NLLLoss", Got: labels.DType(), Want: "int32 class indices as labels"})
	}
	logp = g.cast(logp, g.fp32Only(tensor.OpNLLLoss, logp))
	losses := g.keep(tensor.NLL(logp.t, labels))
	var out *tensor.Tensor
	if r == Sum {
		out = tensor.Sum(losses)
	} else {
		out = tensor.Mean(losses)
	}
	return g.record(tensor.OpNLLLoss, out, attrs{n: int(r)}, []*tensor.Tensor{labels}, logp)
}

// d/dlogp[r, c] = -dy at c == label[r], divided by N for the mean.
func nllBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	logp := n.inputs[0].t
	alpha := float32(1)
	if Reduction(n.attr.n) == Mean {
		alpha /= float32(logp.Shape()[0])
	}
	return []*tensor.Tensor{tensor.NLLBackward(logp, n.saved[0], dy, alpha)}
}
