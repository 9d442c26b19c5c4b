package nn

import (
	"github.com/vkamp/vkamp/tensor"
)

// Layout ops of the graph: each copies its input's elements (tensors are
// contiguous) and keeps its dtype, as on no autocast list; Concat and Stack
// promote their inputs to the widest dtype, as torch.cat does. Axes count
// from the end when negative. Misuse panics as the tensor ops do.

// Permute returns x with axis i of the result being axis perm[i] of x.
func (g *Graph) Permute(x *Var, perm ...int) *Var {
	defer g.use("Permute").done()
	return g.permute(x, perm)
}

func (g *Graph) permute(x *Var, perm []int) *Var {
	x = g.cast(x, g.dtypeFor(tensor.OpPermute, x))
	out := tensor.Permute(x.t, perm...)
	r := len(perm)
	p := make([]int, r)
	for i, a := range perm { // checked by tensor.Permute
		if a < 0 {
			a += r
		}
		p[i] = a
	}
	return g.record(tensor.OpPermute, out, attrs{ints: p}, nil, x)
}

// Transpose returns x with axes d0 and d1 swapped.
func (g *Graph) Transpose(x *Var, d0, d1 int) *Var {
	defer g.use("Transpose").done()
	r := len(x.Shape())
	perm := make([]int, r)
	for i := range perm {
		perm[i] = i
	}
	a, b := normAxis(d0, r), normAxis(d1, r)
	if a < 0 || b < 0 {
		tensor.Transpose(x.t, d0, d1) // panics, naming the axis and shape
	}
	perm[a], perm[b] = b, a
	return g.permute(x, perm)
}

// Narrow returns elements [start, start+length) of x along axis.
func (g *Graph) Narrow(x *Var, axis, start, length int) *Var {
	defer g.use("Narrow").done()
	x = g.cast(x, g.dtypeFor(tensor.OpNarrow, x))
	out := tensor.Narrow(x.t, axis, start, length)
	ax := normAxis(axis, len(x.Shape()))
	if start < 0 {
		start += x.Shape()[ax]
	}
	return g.record(tensor.OpNarrow, out, attrs{ints: []int{ax, start, length}}, nil, x)
}

// Concat joins xs along axis (torch.cat).
func (g *Graph) Concat(axis int, xs ...*Var) *Var {
	defer g.use("Concat").done()
	return g.join(tensor.OpConcat, axis, xs, tensor.Concat)
}

// Stack joins xs, all of one shape, along a new axis (torch.stack).
func (g *Graph) Stack(axis int, xs ...*Var) *Var {
	defer g.use("Stack").done()
	return g.join(tensor.OpStack, axis, xs, tensor.Stack)
}

// join records Concat or Stack: the inputs cast to the policy's dtype, and
// attrs holding the output's axis and each input's length along it.
func (g *Graph) join(op tensor.Op, axis int, xs []*Var, f func(int, ...*tensor.Tensor) *tensor.Tensor) *Var {
	if len(xs) == 0 {
		panic(&tensor.UsageError{Op: op.String(), Msg: "no tensors"})
	}
	dt := g.dtypeFor(op, xs...)
	ts := make([]*tensor.Tensor, len(xs))
	cast := make([]*Var, len(xs))
	for i, x := range xs {
		cast[i] = g.cast(x, dt)
		ts[i] = cast[i].t
	}
	out := f(axis, ts...)
	ax := normAxis(axis, len(out.Shape()))
	ints := []int{ax}
	for _, x := range cast {
		if op == tensor.OpStack {
			ints = append(ints, 1)
		} else {
			ints = append(ints, x.Shape()[ax])
		}
	}
	return g.record(op, out, attrs{ints: ints}, nil, cast...)
}

// Gather returns x's elements picked along axis by idx, an Int32 tensor
// of x's rank (torch.gather); an index out of range gives NaN and raises
// the device's assert, as Embedding says. The gradient sums into x every
// element of the result's gradient taken from it.
func (g *Graph) Gather(x *Var, axis int, idx *tensor.Tensor) *Var {
	defer g.use("Gather").done()
	x = g.cast(x, g.dtypeFor(tensor.OpGather, x))
	out := tensor.Gather(x.t, axis, idx)
	return g.record(tensor.OpGather, out, attrs{n: normAxis(axis, len(x.Shape()))}, []*tensor.Tensor{idx}, x)
}

// normAxis is axis in [0, r), or -1 if it lies outside [-r, r).
func normAxis(axis, r int) int {
	if axis < -r || axis >= r {
		return -1
	}
	if axis < 0 {
		axis += r
	}
	return axis
}

// TopK returns the k largest elements of x along its last axis, largest
// first, and their Int32 indices, as torch.topk(x, k): the indices are
// tensor.TopK's, and the values x's elements gathered by them (Gather), so
// the gradient goes to the elements picked, as PyTorch's does. The indices
// belong to the caller, who releases them after the graph's Backward (the
// gradient reads them). Panics as tensor.TopK.
func (g *Graph) TopK(x *Var, k int) (*Var, *tensor.Tensor) {
	v, idx := tensor.TopK(x.t, k)
	v.Release() // the graph gathers its own values, recorded
	return g.Gather(x, -1, idx), idx
}

// Sort returns x sorted along its last axis and the Int32 indices that
// sort it, as torch.sort(x, dim=-1, descending, stable=True): the indices
// are tensor.ArgSort's, the values x's elements gathered by them, so the
// gradient goes back to each element's place. The indices belong to the
// caller, as TopK's. Panics as tensor.ArgSort.
func (g *Graph) Sort(x *Var, descending bool) (*Var, *tensor.Tensor) {
	idx := tensor.ArgSort(x.t, descending)
	return g.Gather(x, -1, idx), idx
}
