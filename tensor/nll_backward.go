package tensor

import (
	"slices"

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

// LogSoftmaxBackward returns the gradient of LogSoftmax's input from dy,
// the gradient of its output, and y, its output: dx = dy - exp(y) *
// sum(dy) over each row of the last axis, a Float32 tensor of y's shape.
// dy and y must be Float32 of one shape.
func LogSoftmaxBackward(dy, y *Tensor) *Tensor {
	const op = "LogSoftmaxBackward"
	sameDevice(op, dy, y)
	if !slices.Equal(dy.shape, y.shape) {
		shapePanic(op, dy.shape, y.shape, "dy must have y's shape")
	}
	checkFloat32(op, dy, y)
	rows, cols := lastAxis(y)
	dx := newOut(y.dev, Float32, y.shape, dy, y)
	recordInto(op, func() error {
		return kernels.LogSoftmaxBackward(y.dev, rowGrid(rows), kernels.LogSoftmaxBackwardSpec{LocalSizeX: rowLocal(y.dev, cols)},
			kernels.LogSoftmaxBackwardPush{Rows: uint32(rows), Cols: uint32(cols)},
			kernels.LogSoftmaxBackwardBind{Dy: dy.buf, Y: y.buf, Dx: dx.buf})
	}, dx)
	return dx
}
