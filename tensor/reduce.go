package tensor

import (
	"math/bits"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// Reductions take a Float32, Float16 or BFloat16 input (Int32 panics with a
// *DTypeError), accumulate in fp32 and return Float32 tensors whatever the
// input dtype. They are deterministic: each has a fixed reduction tree that
// depends only on the shape and the device's workgroup size, and no float
// atomics, so the same input gives the same bits on the same device every
// run.

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
func Sum(x *Tensor) *Tensor { return whole("Sum", x, sumRows, sumRows, false) }

// Mean returns the mean of all elements of x, with shape [1].
func Mean(x *Tensor) *Tensor { return whole("Mean", x, sumRows, sumRows, true) }

// SumSquares returns the sum of the squares of all elements of x, with shape
// [1], as gradient norms need.
func SumSquares(x *Tensor) *Tensor {
	return whole("SumSquares", x, sumsqRows, sumRows, false)
}

// Max returns the largest element of x, with shape [1]; NaN if x has one.
func Max(x *Tensor) *Tensor { return whole("Max", x, maxRows, maxRows, false) }

// SumAxis returns the sum of x over axis, which is removed from the shape (a
// 1-D x gives shape [1], as Sum does). A negative axis counts from the end.
func SumAxis(x *Tensor, axis int) *Tensor {
	return alongAxis("SumAxis", x, axis, sumRows, sumCols, false, Float32)
}

// SumAxisAs is SumAxis with the sums stored as dt (Float32, Float16 or
// BFloat16), each rounded once from its fp32 value: bit for bit
// Cast(SumAxis(x, axis), dt), without the cast's kernel when axis is not
// the last (a bias gradient under autocast).
func SumAxisAs(x *Tensor, axis int, dt DType) *Tensor {
	checkFloating("SumAxisAs", dt)
	return alongAxis("SumAxisAs", x, axis, sumRows, sumCols, false, dt)
}

// MeanAxis is SumAxis divided by the length of axis.
func MeanAxis(x *Tensor, axis int) *Tensor {
	return alongAxis("MeanAxis", x, axis, sumRows, sumCols, true, Float32)
}

// MaxAxis returns the maximum of x over axis, removed from the shape as in
// SumAxis; NaN wins.
func MaxAxis(x *Tensor, axis int) *Tensor {
	return alongAxis("MaxAxis", x, axis, maxRows, maxCols, false, Float32)
}

// Softmax returns exp(x - m) / sum(exp(x - m)) over the last axis, m being
// the row max, as a Float32 tensor of x's shape. A row holding NaN or +inf
// gives NaN, as the formula does.
func Softmax(x *Tensor) *Tensor { return softmax("Softmax", softmaxRows, x) }

// LogSoftmax returns (x - m) - log(sum(exp(x - m))) over the last axis, m
// being the row max, as a Float32 tensor of x's shape.
func LogSoftmax(x *Tensor) *Tensor { return softmax("LogSoftmax", logSoftmaxRows, x) }

// whole reduces all of x: in one workgroup when x is small, else in a first
// pass of up to maxPartials workgroups over contiguous chunks and a second
// pass over their partial results.
func whole(op string, x *Tensor, first, second rowsKernel, mean bool) *Tensor {
	sameDevice(op, x)
	checkFloating(op, Float32, x)
	out := newOut(x.dev, Float32, []int{1}, x)
	scale := float32(1)
	if mean {
		scale = float32(1 / float64(x.n))
	}
	local := reduceLocal(out)
	g := min((x.n+local*perInvocation-1)/(local*perInvocation), maxPartials)
	if g <= 1 {
		rows(op, out, first, x, 1, x.n, x.n, scale)
		return out
	}
	cols := (x.n + g - 1) / g
	g = (x.n + cols - 1) / cols
	part := newOut(x.dev, Float32, []int{g}, out)
	defer part.Release() // the device keeps it until the second pass has run
	rows(op, part, first, x, g, cols, x.n, 1)
	if part.err != nil {
		if out.err == nil {
			out.fail(part.err)
		}
		return out
	}
	rows(op, out, second, part, 1, g, g, scale)
	return out
}

// alongAxis reduces x over one axis into a tensor of dtype dt: with the
// row kernel when the axis is the last (or all later axes have length 1),
// then a cast for a dt other than Float32, else with one invocation per
// output looping over the axis, which stores dt itself.
func alongAxis(op string, x *Tensor, axis int, rowsK rowsKernel, colsK colsKernel, mean bool, dt DType) *Tensor {
	sameDevice(op, x)
	checkFloating(op, Float32, x)
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
	scale := float32(1)
	if mean {
		scale = float32(1 / float64(k))
	}
	if inner == 1 {
		out := newOut(x.dev, Float32, shape, x)
		rows(op, out, rowsK, x, outer, k, x.n, scale)
		if dt == Float32 {
			return out
		}
		defer out.Release()
		return Cast(out, dt)
	}
	out := newOut(x.dev, dt, shape, x)
	colsPass(op, out, colsK, x, outer, k, inner, scale)
	return out
}

func softmax(op string, k softmaxKernel, x *Tensor) *Tensor {
	sameDevice(op, x)
	checkFloating(op, Float32, x)
	cols := 1
	if len(x.shape) > 0 {
		cols = x.shape[len(x.shape)-1]
	}
	out := newOut(x.dev, Float32, x.shape, x)
	if out.err != nil {
		return out
	}
	r := x.n / cols
	seg := segment(out, cols)
	grid := rowGroups(out, r, seg)
	if !checkLoopsN(out, op, rowLoops(out, r, seg, grid, 3*ceilDiv(cols, seg)), "a row of %d", cols) {
		return out
	}
	p := kernels.SoftmaxPush{Rows: uint32(r), Cols: uint32(cols), Seg: uint32(seg)}
	launched(out, k(out.dev, grid, reduceSpec(out, x), p, xyBind{X: x.buf, Y: out.buf}))
	return out
}

// rows records the row kernel: out[r] = scale * reduce(x[r*cols : min((r+1)*cols, n)]).
func rows(op string, out *Tensor, k rowsKernel, x *Tensor, r, cols, n int, scale float32) {
	if out.err != nil {
		return
	}
	seg := segment(out, cols)
	grid := rowGroups(out, r, seg)
	if !checkLoopsN(out, op, rowLoops(out, r, seg, grid, ceilDiv(cols, seg)), "a row of %d", cols) {
		return
	}
	p := kernels.RowsPush{Rows: uint32(r), Cols: uint32(cols), N: uint32(n), Seg: uint32(seg), Scale: scale}
	launched(out, k(out.dev, grid, reduceSpec(out, x), p, xyBind{X: x.buf, Y: out.buf}))
}

// rowLoops is the loop iterations of one invocation of a row kernel whose
// rows take perRow each: the workgroups' loop over their rows, each with
// its row loops and a tree of log2(seg) steps.
func rowLoops(t *Tensor, rows, seg int, grid [3]uint32, perRow int) int {
	per := reduceLocal(t) / seg
	iters := ceilDiv(ceilDiv(rows, per), int(grid[0]))
	return iters * (1 + perRow + bits.Len(uint(seg)))
}

// The reduction kernels of one family (rows.glsl, cols.glsl, softmax.glsl)
// share one interface; these function types hold any of them, converted by
// asKernel so that whole can take two different ones.
type (
	xSpec = struct {
		LocalSizeX uint32
		In0DT      kernels.DType
	}
	colsSpec = struct {
		LocalSizeX   uint32
		In0DT, OutDT kernels.DType
	}
	xyBind        = struct{ X, Y *vk.Buffer }
	rowsKernel    = func(*vk.Device, [3]uint32, xSpec, kernels.RowsPush, xyBind) error
	colsKernel    = func(*vk.Device, [3]uint32, colsSpec, kernels.ColsPush, xyBind) error
	softmaxKernel = func(*vk.Device, [3]uint32, xSpec, kernels.SoftmaxPush, xyBind) error
)

var (
	sumRows        = withRowsTex(asRows(kernels.SumRowsForms))
	sumsqRows      = withRowsTex(asRows(kernels.SumsqRowsForms))
	maxRows        = withRowsTex(asRows(kernels.MaxRowsForms))
	sumCols        = withColsTex(asCols(kernels.SumColsForms))
	maxCols        = withColsTex(asCols(kernels.MaxColsForms))
	softmaxRows    = withSoftmaxTex(asRows(kernels.SoftmaxForms))
	logSoftmaxRows = withSoftmaxTex(asRows(kernels.LogSoftmaxForms))
)

// asRows turns a generated kernel family whose spec and bindings are an
// xSpec and an xyBind into one of those.
func asRows[S ~xSpec, P any, B ~xyBind](k kernels.Forms[S, P, B]) kernels.Forms[xSpec, P, xyBind] {
	conv := func(k func(*vk.Device, [3]uint32, S, P, B) error) func(*vk.Device, [3]uint32, xSpec, P, xyBind) error {
		return func(d *vk.Device, g [3]uint32, s xSpec, p P, b xyBind) error { return k(d, g, S(s), p, B(b)) }
	}
	return kernels.Forms[xSpec, P, xyBind]{Plain: conv(k.Plain), Texel: conv(k.Texel)}
}

// asCols is asRows for the column kernels, whose spec also holds the
// output's dtype.
func asCols[S ~colsSpec, B ~xyBind](k kernels.Forms[S, kernels.ColsPush, B]) kernels.Forms[colsSpec, kernels.ColsPush, xyBind] {
	conv := func(k func(*vk.Device, [3]uint32, S, kernels.ColsPush, B) error) colsKernel {
		return func(d *vk.Device, g [3]uint32, s colsSpec, p kernels.ColsPush, b xyBind) error {
			return k(d, g, S(s), p, B(b))
		}
	}
	return kernels.Forms[colsSpec, kernels.ColsPush, xyBind]{Plain: conv(k.Plain), Texel: conv(k.Texel)}
}

// reduceLocal is the workgroup size of tree reductions: the elementwise size
// rounded down to a power of two, for the tree.
func reduceLocal(t *Tensor) int {
	if t.dev.Deterministic() {
		return detReduceLocal
	}
	l := int(kernels.LocalSize(t.dev))
	p := 1
	for p*2 <= l {
		p *= 2
	}
	return p
}

// segment is the number of invocations that reduce one row: a power of two
// giving each about perInvocation elements, at most the workgroup. On a CPU
// driver, whose barriers cost far more than a row's loop, each invocation
// owns whole rows up to 4096 long (as the layer norm's do).
func segment(t *Tensor, cols int) int {
	if formsOf(t.dev).rowPerInvocation && cols <= rowOwnMax && !t.dev.Deterministic() {
		return 1 // not in deterministic mode: a GPU's tree must sum in the same order
	}
	local, s := reduceLocal(t), 1
	for s*perInvocation < cols && s < local {
		s *= 2
	}
	return s
}

// reduceSpec is the spec of a tree reduction: its workgroup size and x's
// dtype.
func reduceSpec(out, x *Tensor) xSpec {
	return xSpec{LocalSizeX: uint32(reduceLocal(out)), In0DT: x.dtype.code()}
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
