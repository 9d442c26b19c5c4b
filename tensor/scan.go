package tensor

import (
	"math/bits"
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// Ops along one axis that keep its positions: ArgMax, ArgMin and CumSum.
// Each views x as [outer, k, inner], k the axis's length, and gives one
// invocation a line (o, i), or a chunk of one: lavapipe ends an
// invocation's loops after 65535 iterations (ErrLoopLimit), so an axis
// longer than lineMax is cut into chunks of lineChunk, reduced in a first
// dispatch and combined in chunk order in a second. Both constants are the
// same on every device, so the order of CumSum's adds, and so its bits in
// deterministic mode, depend on the shape alone.
const (
	lineMax   = 4096
	lineChunk = 1024
)

// ArgMax returns the index along axis of the largest element of each line
// of x, as PyTorch's argmax(dim, keepdim): an Int32 tensor of x's shape
// without axis (with it as 1 if keepdim; a 1-D x without keepdim gives
// shape [1], as SumAxis does). Among equal values the first index wins,
// -0 and +0 being equal, and NaN is larger than every number: a line
// holding NaN gives its first NaN's index. x may be any floating dtype (an
// Int32 x panics with a *DTypeError); a negative axis counts from the end,
// one out of range panics with a *UsageError. The values are compared as
// bits, exactly, so the result is the same on every device and tier.
func ArgMax(x *Tensor, axis int, keepdim bool) *Tensor {
	return argReduce("ArgMax", asArgKernel(kernels.Argmax), x, axis, keepdim)
}

// ArgMin is ArgMax for the smallest element; NaN still wins, as in
// PyTorch's argmin.
func ArgMin(x *Tensor, axis int, keepdim bool) *Tensor {
	return argReduce("ArgMin", asArgKernel(kernels.Argmin), x, axis, keepdim)
}

type (
	argBind   = struct{ X, P, Y *vk.Buffer }
	argKernel = func(*vk.Device, [3]uint32, kernels.ArgmaxSpec, kernels.ArgPush, kernels.ArgmaxBind) error
)

// asArgKernel lets ArgMax and ArgMin share argReduce: their launchers
// differ only in their types' names.
func asArgKernel[S ~struct {
	LocalSizeX uint32
	In0DT      kernels.DType
}, B ~argBind](k func(*vk.Device, [3]uint32, S, kernels.ArgPush, B) error) argKernel {
	return func(d *vk.Device, g [3]uint32, s kernels.ArgmaxSpec, p kernels.ArgPush, b kernels.ArgmaxBind) error {
		return k(d, g, S(s), p, B(b))
	}
}

// line returns x's view along axis as [outer, k, inner], axis checked.
func line(op string, x *Tensor, axis int) (ax, outer, k, inner int) {
	ax = checkAxis(op, x, axis)
	outer, k, inner = 1, x.shape[ax], 1
	for _, s := range x.shape[:ax] {
		outer *= s
	}
	for _, s := range x.shape[ax+1:] {
		inner *= s
	}
	return ax, outer, k, inner
}

// chunking returns the chunk length and count of an axis of k.
func chunking(k int) (chunk, chunks int) {
	if k <= lineMax {
		return k, 1
	}
	return lineChunk, ceilDiv(k, lineChunk)
}

// lineLoops checks that a dispatch over n slots whose slots loop per times
// each stays within out's device's loop limit.
func lineLoops(out *Tensor, op string, n, per, k int) bool {
	grid := groups1D(out, n)
	slots := ceilDiv(n, int(grid[0])*int(kernels.LocalSize(out.dev)))
	return checkLoopsN(out, op, slots*(per+1), "a line of %d along the axis", k)
}

// checkLastAxis checks the input of an op along x's last axis (TopK, Sort): a
// floating x, of at least one axis; it returns that axis's length.
func checkLastAxis(op string, x *Tensor) int {
	sameDevice(op, x)
	if !x.dtype.floating() {
		panic(&DTypeError{Op: op, Got: x.dtype, Want: wantFloating + " input"})
	}
	if len(x.shape) == 0 {
		usagePanic(op, "x has no axis")
	}
	return x.shape[len(x.shape)-1]
}

func argReduce(op string, kern argKernel, x *Tensor, axis int, keepdim bool) *Tensor {
	sameDevice(op, x)
	if !x.dtype.floating() {
		panic(&DTypeError{Op: op, Got: x.dtype, Want: wantFloating + " input"})
	}
	ax, outer, k, inner := line(op, x, axis)
	shape := slices.Clone(x.shape)
	if keepdim {
		shape[ax] = 1
	} else if shape = slices.Delete(shape, ax, ax+1); len(shape) == 0 {
		shape = []int{1}
	}
	out := newOut(x.dev, Int32, shape, x)
	chunk, chunks := chunking(k)
	spec := kernels.ArgmaxSpec{In0DT: x.dtype.code()}
	p := kernels.ArgPush{Outer: uint32(outer), K: uint32(k), Inner: uint32(inner), Chunk: uint32(chunk), Phase: 1}
	part := out
	if chunks > 1 {
		part = newOut(x.dev, Int32, []int{2 * outer * chunks * inner}, out)
		defer part.Release() // the device keeps it until the second dispatch has run
		n := outer * chunks * inner
		if lineLoops(out, op, n, chunk, k) {
			p0 := p
			p0.Phase = 0
			launched(out, firstErr(part))
			if out.err == nil {
				launched(out, kern(x.dev, groups1D(out, n), spec, p0, kernels.ArgmaxBind{X: x.buf, P: part.buf, Y: out.buf}))
			}
		}
	}
	if lineLoops(out, op, outer*inner, max(chunks, chunk), k) {
		launched(out, kern(x.dev, groups1D(out, outer*inner), spec, p, kernels.ArgmaxBind{X: x.buf, P: part.buf, Y: out.buf}))
	}
	return out
}

// CumSum returns the inclusive prefix sums of x along axis, as PyTorch's
// cumsum(dim): element j of a line is the sum of its elements 0 to j,
// accumulated in fp32 and rounded once to out (Float32, Float16 or
// BFloat16), the result having x's shape. The adds run in a fixed order
// that depends only on the shape (left to right along lines of up to 4096;
// longer ones as chunks of 1024, each started from the sum of the chunk
// sums before it), so the result is the same on every run, and, in
// deterministic mode, on every driver and tier. NaN and infinities
// propagate as the adds make them. x may be any floating dtype (an Int32 x
// or out panics with a *DTypeError); a negative axis counts from the end,
// one out of range panics with a *UsageError.
func CumSum(x *Tensor, axis int, out DType) *Tensor { return cumSum("CumSum", x, axis, out, false) }

// CumSumReverse is CumSum from the other end of the axis: element j of a
// line is the sum of its elements j to the last, added from the last (the
// same order as CumSum of the line reversed, the same bits), as PyTorch's
// x.flip(dim).cumsum(dim).flip(dim): the gradient of CumSum, and CumSum's
// the gradient of it.
func CumSumReverse(x *Tensor, axis int, out DType) *Tensor {
	return cumSum("CumSumReverse", x, axis, out, true)
}

func cumSum(op string, x *Tensor, axis int, out DType, reverse bool) *Tensor {
	sameDevice(op, x)
	checkFloating(op, out, x)
	_, outer, k, inner := line(op, x, axis)
	y := newOut(x.dev, Float32, x.shape, x)
	chunk, chunks := chunking(k)
	spec := kernels.CumsumSpec{In0DT: x.dtype.code()}
	p := kernels.CumsumPush{Outer: uint32(outer), K: uint32(k), Inner: uint32(inner), Chunk: uint32(chunk), Phase: 1}
	if reverse {
		p.Reverse = 1
	}
	n := outer * chunks * inner
	part := y
	if chunks > 1 {
		part = newOut(x.dev, Float32, []int{n}, y)
		defer part.Release() // the device keeps it until the second dispatch has run
		if lineLoops(y, op, n, chunk, k) {
			p0 := p
			p0.Phase = 0
			launched(y, firstErr(part))
			if y.err == nil {
				launched(y, kernels.Cumsum(x.dev, groups1D(y, n), spec, p0, kernels.CumsumBind{X: x.buf, P: part.buf, Y: y.buf}))
			}
		}
	}
	if lineLoops(y, op, n, chunks+chunk, k) {
		launched(y, kernels.Cumsum(x.dev, groups1D(y, n), spec, p, kernels.CumsumBind{X: x.buf, P: part.buf, Y: y.buf}))
	}
	if out == Float32 {
		return y
	}
	defer y.Release()
	return Cast(y, out)
}

// TopK returns the k largest elements of each row of x along its last axis
// and their indices, largest first, as PyTorch's topk(k, dim=-1,
// largest=True, sorted=True): values in x's dtype (bit-exact copies of
// x's elements) and Int32 indices, both of x's shape with the last axis k
// long. NaN is larger than every number, -0 equal to +0, and equal values
// come in index order (PyTorch leaves their order unspecified); values
// compare as bits, so the indices are the same on every device and tier.
// A k outside [1, len of the last axis] panics with a *UsageError, an
// Int32 x with a *DTypeError.
//
// Each row is k passes of one workgroup over the row: meant for the small
// k of sampling and top-k accuracy. A row whose passes would loop past
// lavapipe's limit (k * len / workgroup size above 65535 or so) gives
// results carrying ErrLoopLimit there.
func TopK(x *Tensor, k int) (values, indices *Tensor) {
	const op = "TopK"
	cols := checkLastAxis(op, x)
	if k < 1 || k > cols {
		usagePanic(op, "k %d outside [1, %d], the last axis of %v", k, cols, x.shape)
	}
	shape := slices.Clone(x.shape)
	shape[len(shape)-1] = k
	idx := newOut(x.dev, Int32, shape, x)
	rows := x.n / cols
	// A workgroup of the row's length rounded up to a power of two (the
	// tree's), at most a tree reduction's: short rows leave no idle
	// invocations meeting at the barriers.
	local := 1
	for local < cols && local < reduceLocal(idx) {
		local *= 2
	}
	grid := min(rows, int(x.dev.Info().MaxWorkgroupCount[0]), 1<<16-1)
	per := ceilDiv(rows, grid) * k * (ceilDiv(cols, local) + bits.Len(uint(local)) + 1)
	if checkLoopsN(idx, op, per, "top-k of a row of %d", cols) {
		p := kernels.TopkPush{Rows: uint32(rows), Cols: uint32(cols), K: uint32(k)}
		launched(idx, kernels.Topk(x.dev, [3]uint32{uint32(grid), 1, 1}, kernels.TopkSpec{LocalSizeX: uint32(local), In0DT: x.dtype.code()}, p,
			kernels.TopkBind{X: x.buf, Y: idx.buf}))
	}
	if idx.err != nil {
		return newOut(x.dev, x.dtype, shape, idx), idx
	}
	return Gather(x, -1, idx), idx
}
