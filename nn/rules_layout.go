package nn

import (
	"slices"

	"github.com/vkamp/vkamp/tensor"
)

// Backward rules of softmax, log-softmax and the layout ops, and the sum of
// a broadcast gradient back to its operand's shape for batched MatMul.

// dx = y (dy - sum(dy y)) along the axis, y the op's output.
func softmaxBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	dx := tensor.SoftmaxBackward(n.out.t, dy, n.attr.n)
	return []*tensor.Tensor{castTo(g, dx, n.inputs[0].DType())}
}

// dx = dy - exp(y) sum(dy) along the axis.
func logSoftmaxBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	dx := tensor.LogSoftmaxBackward(n.out.t, dy, n.attr.n)
	return []*tensor.Tensor{castTo(g, dx, n.inputs[0].DType())}
}

// The gradient of a permutation is the inverse permutation.
func permuteBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	perm := n.attr.ints
	back := make([]int, len(perm))
	for i, a := range perm {
		back[a] = i
	}
	return []*tensor.Tensor{tensor.Permute(dy, back...)}
}

// The gradient of a slice is dy in its place and zeros around it.
func narrowBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	ax, start, length := n.attr.ints[0], n.attr.ints[1], n.attr.ints[2]
	shape := n.inputs[0].Shape()
	parts := []*tensor.Tensor{}
	zeros := func(k int) {
		s := slices.Clone(shape)
		s[ax] = k
		parts = append(parts, g.keep(tensor.Zeros(dy.Device(), dy.DType(), s...)))
	}
	if start > 0 {
		zeros(start)
	}
	parts = append(parts, dy)
	if rest := shape[ax] - start - length; rest > 0 {
		zeros(rest)
	}
	if len(parts) == 1 {
		return []*tensor.Tensor{dy}
	}
	return []*tensor.Tensor{tensor.Concat(ax, parts...)}
}

// The gradient of each joined input is its slab of dy.
func concatBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	return joinBack(g, n, dy)
}

// As concatBack, each slab reshaped to drop the stacked axis.
func stackBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	return joinBack(g, n, dy)
}

func joinBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	ax, sizes := n.attr.ints[0], n.attr.ints[1:]
	grads := make([]*tensor.Tensor, len(n.inputs))
	off := 0
	for i, in := range n.inputs {
		if need(n, i) {
			gr := tensor.Narrow(dy, ax, off, sizes[i])
			if n.op == tensor.OpStack {
				gr = tensor.Reshape(g.keep(gr), in.Shape()...)
			}
			grads[i] = gr
		}
		off += sizes[i]
	}
	return grads
}

// dx sums every element of dy that gather took from it.
func gatherBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	x := n.inputs[0]
	dx := tensor.GatherBackward(dy, n.saved[0], n.attr.n, x.Shape()...)
	return []*tensor.Tensor{castTo(g, dx, x.DType())}
}

// castTo returns t in dtype dt: t itself if it has it, else a cast (t is
// then kept by the graph until it is released).
func castTo(g *Graph, t *tensor.Tensor, dt tensor.DType) *tensor.Tensor {
	if t.DType() == dt {
		return t
	}
	return tensor.Cast(g.keep(t), dt)
}

// sumTo sums the gradient gr of a MatMul operand, computed over the
// broadcast batch, over the batch dimensions that the operand op broadcast
// along, back to op's shape and dtype (in fp32, then cast).
func sumTo(g *Graph, gr, op *tensor.Tensor) *tensor.Tensor {
	want := op.Shape()
	got := gr.Shape()
	if slices.Equal(got, want) {
		return gr
	}
	t := g.keep(gr)
	// Leading dimensions the operand does not have.
	for len(t.Shape()) > len(want) {
		t = g.keep(tensor.SumAxis(t, 0))
	}
	// Dimensions of 1 that broadcast: summed (SumAxis drops them; the
	// reshape below puts them back).
	for i := len(want) - 3; i >= 0; i-- {
		if want[i] == 1 && t.Shape()[i] != 1 {
			t = g.keep(tensor.SumAxis(t, i))
			s := t.Shape()
			t = g.keep(tensor.Reshape(t, append(append(slices.Clone(s[:i]), 1), s[i:]...)...))
		}
	}
	if !slices.Equal(t.Shape(), want) {
		t = g.keep(tensor.Reshape(t, want...))
	}
	return castTo(g, t, op.DType())
}
