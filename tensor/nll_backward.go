package tensor

import (
	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// NLLBackward returns the gradient, with respect to the log-probabilities
// logp [N, C], of alpha times the summed negative log-likelihood NLL gives,
// times the upstream gradient dy (one Float32 element): -alpha * dy[0] at
// each row's label, 0 elsewhere, a Float32 tensor [N, C]. alpha is 1/N for
// a mean, 1 for a sum. Labels are Int32 class indices, as NLL takes them;
// the row of a label outside [0, C) is NaN in every class and raises the
// device's assert as NLL does.
func NLLBackward(logp, labels, dy *Tensor, alpha float32) *Tensor {
	rows, cols := checkLogProbs("NLLBackward", logp, labels)
	sameDevice("NLLBackward", logp, dy)
	checkItem("NLLBackward", dy)
	out := newOut(logp.dev, Float32, logp.shape, labels, dy)
	recordInto("NLLBackward", func() error {
		return withAssert(logp.dev, func(rec *vk.Buffer) error {
			return kernels.NllBackward(logp.dev, kernels.Groups(logp.dev, rows*cols), kernels.NllBackwardSpec{AssertOp: assertNLLBackward},
				kernels.NllBackwardPush{Rows: uint32(rows), Cols: uint32(cols), Alpha: alpha},
				kernels.NllBackwardBind{Y: labels.buf, S: dy.buf, Out: out.buf, Assert: rec})
		})
	}, out)
	return out
}
