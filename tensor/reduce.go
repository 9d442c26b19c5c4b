package tensor

import (
	"math"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
)

// Reductions accumulate in fp32 and return Float32 tensors whatever the input
// dtype. They are deterministic: each has a fixed reduction tree that depends
// only on the shape and the device's workgroup size, and no float atomics, so
// the same input gives the same bits on the same device every run.

const (
	// perInvocation is the number of elements each invocation of a tree
	// reduction aims to accumulate serially before the tree: enough to
	// amortise the tree's barriers (on CPU drivers each one switches every
	// invocation's context), few enough to spread rows over many invocations.
	perInvocation = 32
	// maxPartials bounds the first pass, so the second is one workgroup.
	maxPartials = 1024
)

// Sum returns the sum of all elements of x, with shape [1].
func Sum(x *Tensor) *Tensor { return whole("Sum", x, "sum_rows", "sum_rows", false) }

// Mean returns the mean of all elements of x, with shape [1].
func Mean(x *Tensor) *Tensor { return whole("Mean", x, "sum_rows", "sum_rows", true) }

// SumSquares returns the sum of the squares of all elements of x, with shape
// [1], as gradient norms need.
func SumSquares(x *Tensor) *Tensor {
	return whole("SumSquares", x, "sumsq_rows", "sum_rows", false)
}

// Max returns the largest element of x, with shape [1]; NaN if x has one.
func Max(x *Tensor) *Tensor { return whole("Max", x, "max_rows", "max_rows", false) }

// SumAxis returns the sum of x over axis, which is removed from the shape (a
// 1-D x gives shape [1], as Sum does). A negative axis counts from the end.
func SumAxis(x *Tensor, axis int) *Tensor { return alongAxis("SumAxis", x, axis, "sum", false) }

// MeanAxis is SumAxis divided by the length of axis.
func MeanAxis(x *Tensor, axis int) *Tensor { return alongAxis("MeanAxis", x, axis, "sum", true) }

// MaxAxis returns the maximum of x over axis, removed from the shape as in
// SumAxis; NaN wins.
func MaxAxis(x *Tensor, axis int) *Tensor { return alongAxis("MaxAxis", x, axis, "max", false) }

// Softmax returns exp(x - m) / sum(exp(x - m)) over the last axis, m being
// the row max, as a Float32 tensor of x's shape. A row holding NaN or +inf
// gives NaN, as the formula does.
func Softmax(x *Tensor) *Tensor { return softmax("Softmax", "softmax", x) }

// LogSoftmax returns (x - m) - log(sum(exp(x - m))) over the last axis, m
// being the row max, as a Float32 tensor of x's shape.
func LogSoftmax(x *Tensor) *Tensor { return softmax("LogSoftmax", "log_softmax", x) }

// whole reduces all of x: in one workgroup when x is small, else in a first
// pass of up to maxPartials workgroups over contiguous chunks and a second
// pass over their partial results.
func whole(op string, x *Tensor, first, second string, mean bool) *Tensor {
	sameDevice(op, x)
	out := newOut(x.dev, Float32, []int{1}, x)
	scale := float32(1)
	if mean {
		scale = float32(1 / float64(x.n))
	}
	local := reduceLocal(out)
	g := min((x.n+local*perInvocation-1)/(local*perInvocation), maxPartials)
	if g <= 1 {
		rows(out, first, x, 1, x.n, x.n, scale)
		return out
	}
	cols := (x.n + g - 1) / g
	g = (x.n + cols - 1) / cols
	part := newOut(x.dev, Float32, []int{g}, out)
	defer part.Release() // the device keeps it until the second pass has run
	rows(part, first, x, g, cols, x.n, 1)
	if part.err != nil {
		if out.err == nil {
			out.fail(part.err)
		}
		return out
	}
	rows(out, second, part, 1, g, g, scale)
	return out
}

// alongAxis reduces x over one axis: with the row kernel when the axis is
// the last (or all later axes have length 1), else with one invocation per
// output looping over the axis.
func alongAxis(op string, x *Tensor, axis int, kind string, mean bool) *Tensor {
	sameDevice(op, x)
	ax := checkAxis(op, x, axis)
	outer, k, inner := 1, x.shape[ax], 1
	for _, s := range x.shape[:ax] {
		outer *= s
	}
	for _, s := range x.shape[ax+1:] {
		inner *= s
	}
	shape := append(append([]int{}, x.shape[:ax]...), x.shape[ax+1:]...)
	if len(shape) == 0 {
		shape = []int{1}
	}
	out := newOut(x.dev, Float32, shape, x)
	scale := float32(1)
	if mean {
		scale = float32(1 / float64(k))
	}
	if inner == 1 {
		rows(out, kind+"_rows", x, outer, k, x.n, scale)
		return out
	}
	spec := map[uint32]uint32{1: dtypeBit(x.dtype)}
	push := []uint32{uint32(outer), uint32(k), uint32(inner), math.Float32bits(scale)}
	launch(out, kind+"_cols", spec, groups1D(out, outer*inner), push, x, out)
	return out
}

func softmax(op, kernel string, x *Tensor) *Tensor {
	sameDevice(op, x)
	cols := 1
	if len(x.shape) > 0 {
		cols = x.shape[len(x.shape)-1]
	}
	out := newOut(x.dev, Float32, x.shape, x)
	r := x.n / cols
	seg := segment(out, cols)
	launch(out, kernel, reduceSpec(out, x), rowGroups(out, r, seg), []uint32{uint32(r), uint32(cols), uint32(seg)}, x, out)
	return out
}

// rows records the row kernel: out[r] = scale * reduce(x[r*cols : min((r+1)*cols, n)]).
func rows(out *Tensor, kernel string, x *Tensor, r, cols, n int, scale float32) {
	seg := segment(out, cols)
	push := []uint32{uint32(r), uint32(cols), uint32(n), uint32(seg), math.Float32bits(scale)}
	launch(out, kernel, reduceSpec(out, x), rowGroups(out, r, seg), push, x, out)
}

// reduceLocal is the workgroup size of tree reductions: the elementwise size
// rounded down to a power of two, for the tree.
func reduceLocal(t *Tensor) int {
	l := int(kernels.LocalSize(t.dev))
	p := 1
	for p*2 <= l {
		p *= 2
	}
	return p
}

// segment is the number of invocations that reduce one row: a power of two
// giving each about perInvocation elements, at most the workgroup.
func segment(t *Tensor, cols int) int {
	local, s := reduceLocal(t), 1
	for s*perInvocation < cols && s < local {
		s *= 2
	}
	return s
}

func reduceSpec(out, x *Tensor) map[uint32]uint32 {
	return map[uint32]uint32{0: uint32(reduceLocal(out)), 1: dtypeBit(x.dtype)}
}

// rowGroups is the grid of a row kernel: one workgroup per local/seg rows,
// within the device's limit (the kernel loops over the rest).
func rowGroups(t *Tensor, rows, seg int) [3]uint32 {
	per := reduceLocal(t) / seg
	g := (rows + per - 1) / per
	g = min(g, int(t.dev.Info().MaxWorkgroupCount[0]), 1<<16-1)
	return [3]uint32{uint32(g), 1, 1}
}

// checkAxis returns axis in [0, rank), panicking with a UsageError if it is
// out of range.
func checkAxis(op string, x *Tensor, axis int) int {
	r := len(x.shape)
	if axis < -r || axis >= r {
		usagePanic(op, "axis %d out of range for shape %v", axis, x.shape)
	}
	if axis < 0 {
		axis += r
	}
	return axis
}
