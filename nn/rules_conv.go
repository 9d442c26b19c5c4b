package nn

import "github.com/vkamp/vkamp/tensor"

// Backward rules of the ops of nn/conv.go. Each gradient has its input's
// dtype, as the engine checks: the op's computing dtype, cast back to an
// fp32 parameter by the cast's rule under autocast.

// y = conv(x, w) + b: dx by the transposed convolution, dw and db from dy
// and x (db is computed with dw and released when there is no bias).
func conv2dBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	x, w := n.inputs[0].t, n.inputs[1].t
	o := n.attr.conv.opts
	grads := make([]*tensor.Tensor, len(n.inputs))
	if need(n, 0) {
		grads[0] = tensor.Conv2dBackwardInput(dy, w, x.Shape(), o)
	}
	hasBias := len(n.inputs) == 3
	if need(n, 1) || hasBias && need(n, 2) {
		dw, db := tensor.Conv2dBackwardWeight(dy, x, w.Shape(), o)
		if need(n, 1) {
			grads[1] = dw
		} else {
			dw.Release()
		}
		if hasBias && need(n, 2) {
			grads[2] = db
		} else {
			db.Release()
		}
	}
	return grads
}

func maxPool2dBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	a := n.attr.conv
	return []*tensor.Tensor{tensor.MaxPool2dBackward(dy, n.saved[0], a.inShape, a.kernel, a.stride, a.padding)}
}

func avgPool2dBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	a := n.attr.conv
	return []*tensor.Tensor{tensor.AvgPool2dBackward(dy, a.inShape, a.kernel, a.stride, a.padding)}
}

func adaptiveAvgPool2dBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	return []*tensor.Tensor{tensor.AdaptiveAvgPool2dBackward(dy, n.attr.conv.inShape)}
}

// The gradient of a reshape is the upstream gradient in the input's shape.
func reshapeBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	return []*tensor.Tensor{tensor.Reshape(dy, n.attr.conv.inShape...)}
}
