package tensor

import (
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
)

// Reductions over any set of axes, as PyTorch's sum, mean, amax and amin
// with dim and keepdim. They follow the other reductions (reduce.go): any
// floating input, fp32 accumulation, a Float32 result, deterministic.
//
// Axes may be negative (counting from the end) and in any order; an axis
// out of range or given twice panics with a *UsageError naming the op. No
// axes (nil or empty) reduce every axis, as PyTorch's dim=None and dim=().
// keepdim keeps each reduced axis with length 1; without it a reduction of
// every axis has shape [1], as Sum's.
//
// The work is done by the row and column kernels of SumAxis: adjacent
// reduced axes merge into one, and each run of reduced axes is one pass
// over x viewed as [outer, reduced, inner], innermost run first, so a set
// of axes such as {0, 2} takes two passes and an fp32 intermediate.

// SumAxes returns the sum of x over axes.
func SumAxes(x *Tensor, axes []int, keepdim bool) *Tensor {
	return reduceAxes("SumAxes", x, axes, keepdim, sumRows, sumCols, false)
}

// MeanAxes returns the mean of x over axes.
func MeanAxes(x *Tensor, axes []int, keepdim bool) *Tensor {
	return reduceAxes("MeanAxes", x, axes, keepdim, sumRows, sumCols, true)
}

// MaxAxes returns the maximum of x over axes (PyTorch's amax); NaN wins.
func MaxAxes(x *Tensor, axes []int, keepdim bool) *Tensor {
	return reduceAxes("MaxAxes", x, axes, keepdim, maxRows, maxCols, false)
}

// MinAxes returns the minimum of x over axes (PyTorch's amin); NaN wins.
func MinAxes(x *Tensor, axes []int, keepdim bool) *Tensor {
	return reduceAxes("MinAxes", x, axes, keepdim, minRows, minCols, false)
}

// SumTo returns x summed down to shape, which must broadcast to x's shape:
// the gradient of an op that broadcast an input of that shape (PyTorch's
// sum_to_size). Leading axes that shape lacks and axes where shape has 1 are
// summed. The result is Float32; with nothing to sum it is a copy of x.
func SumTo(x *Tensor, shape ...int) *Tensor {
	const op = "SumTo"
	sameDevice(op, x)
	checkShape(op, shape)
	if b, ok := BroadcastShape(shape, x.shape); !ok || !slices.Equal(b, x.shape) {
		shapePanic(op, x.shape, shape, "the target shape must broadcast to x's shape")
	}
	red := make([]bool, len(x.shape))
	lead := len(x.shape) - len(shape)
	for i := range red {
		red[i] = i < lead || (shape[i-lead] == 1 && x.shape[i] != 1)
	}
	return reduceFlags(op, x, red, shape, sumRows, sumCols, false)
}

var (
	minRows = withRowsTex(asRows(kernels.MinRowsForms))
	minCols = withColsTex(asCols(kernels.MinColsForms))
)

// reducedAxes returns which axes of a tensor of shape the axes name,
// panicking with a UsageError naming op for one out of range or repeated.
func reducedAxes(op string, shape []int, axes []int) []bool {
	red := make([]bool, len(shape))
	if len(axes) == 0 {
		for i := range red {
			red[i] = true
		}
		return red
	}
	for _, a := range axes {
		ax := a
		if ax < 0 {
			ax += len(shape)
		}
		if ax < 0 || ax >= len(shape) {
			usagePanic(op, "axis %d out of range for shape %v", a, shape)
		}
		if red[ax] {
			usagePanic(op, "axis %d given twice in %v", a, axes)
		}
		red[ax] = true
	}
	return red
}

func reduceAxes(op string, x *Tensor, axes []int, keepdim bool, rowsK rowsKernel, colsK colsKernel, mean bool) *Tensor {
	sameDevice(op, x)
	red := reducedAxes(op, x.shape, axes)
	var shape []int
	for i, s := range x.shape {
		switch {
		case !red[i]:
			shape = append(shape, s)
		case keepdim:
			shape = append(shape, 1)
		}
	}
	if len(shape) == 0 {
		shape = []int{1}
	}
	return reduceFlags(op, x, red, shape, rowsK, colsK, mean)
}

// reduceFlags reduces x over the axes flagged in red into a Float32 tensor
// of shape, which has the elements left.
func reduceFlags(op string, x *Tensor, red []bool, shape []int, rowsK rowsKernel, colsK colsKernel, mean bool) *Tensor {
	checkFloating(op, Float32, x)
	// Runs of adjacent axes alike (reduced or kept), axes of length 1
	// dropped: they move no index.
	type run struct {
		size int
		red  bool
	}
	var runs []run
	for i, s := range x.shape {
		if s == 1 {
			continue
		}
		if n := len(runs); n > 0 && runs[n-1].red == red[i] {
			runs[n-1].size *= s
			continue
		}
		runs = append(runs, run{s, red[i]})
	}
	passes := 0
	for _, r := range runs {
		if r.red {
			passes++
		}
	}
	if passes == 0 { // nothing to reduce: the values themselves, in fp32
		out := Cast(x, Float32)
		out.shape = slices.Clone(shape)
		return out
	}
	cur := x
	for j := len(runs) - 1; j >= 0; j-- {
		if !runs[j].red {
			continue
		}
		outer, k, inner := 1, runs[j].size, 1
		for _, r := range runs[:j] {
			outer *= r.size
		}
		for _, r := range runs[j+1:] {
			inner *= r.size
		}
		passes--
		next := shape
		if passes > 0 {
			next = []int{outer * inner}
		}
		scale := float32(1)
		if mean {
			scale = float32(1 / float64(k))
		}
		var out *Tensor
		if outer == 1 && inner == 1 { // one long row: Sum's two passes
			out = whole(op, cur, rowsK, rowsK, mean)
			out.shape = slices.Clone(next)
		} else if out = newOut(x.dev, Float32, next, cur); inner == 1 {
			rows(op, out, rowsK, cur, outer, k, cur.n, scale)
		} else {
			colsPass(op, out, colsK, cur, outer, k, inner, scale)
		}
		runs[j].size = 1 // reduced: later passes see x without it
		if cur != x {
			cur.Release() // the device keeps it until the pass that reads it has run
		}
		cur = out
	}
	return cur
}

// colsPass records the column kernel: out[o, i] = scale * reduce over j of
// x[o, j, i], x viewed as [outer, k, inner].
func colsPass(op string, out *Tensor, k colsKernel, x *Tensor, outer, kk, inner int, scale float32) {
	if out.err != nil {
		return
	}
	grid := groups1D(out, outer*inner)
	per := ceilDiv(outer*inner, int(grid[0])*int(kernels.LocalSize(out.dev))) // outputs per invocation
	if checkLoopsN(out, op, per*(kk+1), "reducing an axis of %d", kk) {
		p := kernels.ColsPush{Outer: uint32(outer), K: uint32(kk), Inner: uint32(inner), Scale: scale}
		launched(out, k(out.dev, grid, colsSpec{In0DT: x.dtype.code(), OutDT: out.dtype.code()}, p, xyBind{X: x.buf, Y: out.buf}))
	}
}
