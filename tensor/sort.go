package tensor

import (
	"math/bits"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
)

// ArgSort returns the indices that sort each row of x along its last axis,
// as PyTorch's argsort(x, dim=-1, descending, stable=True): an Int32 tensor
// of x's shape whose row r lists the columns of x's row r from the
// smallest value to the largest (the largest first with descending).
// Equal values keep their column order (the sort is stable), -0 and +0
// are equal, and NaN is larger than every number, last ascending and
// first descending, as PyTorch sorts it. Values compare as bits, so the
// result is the same on every device and tier. x may be any floating
// dtype (an Int32 x panics with a *DTypeError); a scalar x panics with a
// *UsageError.
//
// A merge sort on the device: ceil(log2(len)) passes over all rows at
// once, each element placed by binary searches, in two Int32 buffers of
// twice x's length.
func ArgSort(x *Tensor, descending bool) *Tensor { return argSort("ArgSort", x, descending) }

// Sort returns x sorted along its last axis, and the indices ArgSort
// gives, as PyTorch's sort(x, dim=-1, descending, stable=True): the values
// are bit-exact copies of x's elements, in x's dtype.
func Sort(x *Tensor, descending bool) (values, indices *Tensor) {
	idx := argSort("Sort", x, descending)
	if idx.err != nil {
		return newOut(x.dev, x.dtype, x.shape, idx), idx
	}
	return Gather(x, -1, idx), idx
}

func argSort(op string, x *Tensor, descending bool) *Tensor {
	cols := checkLastAxis(op, x)
	out := newOut(x.dev, Int32, x.shape, x)
	a := newOut(x.dev, Int32, []int{2 * x.n}, out)
	defer a.Release() // the device keeps them until the passes have run
	b := newOut(x.dev, Int32, []int{2 * x.n}, a)
	defer b.Release()
	launched(out, firstErr(a, b))
	grid := groups1D(out, x.n)
	slots := ceilDiv(x.n, int(grid[0])*int(kernels.LocalSize(out.dev)))
	if !checkLoopsN(out, op, slots*(bits.Len(uint(cols))+2), "sorting rows of %d", cols) {
		return out
	}
	spec := kernels.ArgsortSpec{In0DT: x.dtype.code()}
	p := kernels.ArgsortPush{N: uint32(x.n), Cols: uint32(cols)}
	if descending {
		p.Descending = 1
	}
	pass := func(phase uint32, from, to *Tensor) {
		if out.err == nil {
			p.Phase = phase
			launched(out, kernels.Argsort(x.dev, grid, spec, p, kernels.ArgsortBind{X: x.buf, P: from.buf, Q: to.buf, Y: out.buf}))
		}
	}
	pass(0, b, a) // pairs into a, runs of one
	for w := 1; w < cols; w *= 2 {
		p.Width = uint32(w)
		pass(1, a, b)
		a, b = b, a
	}
	pass(2, a, b) // the sorted pairs' columns into out
	return out
}
