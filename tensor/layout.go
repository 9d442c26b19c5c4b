package tensor

import (
	"fmt"
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// Layout ops: copies that move elements between positions without changing
// them (Permute, Transpose, Narrow, Concat, Stack) or that pick them by
// index (Gather). Tensors are contiguous, so each returns a new tensor, made
// by one strided-copy kernel (shaders/copy_nd.comp) that copies bits: every
// dtype, Int32 included, comes out unchanged, NaN payloads too. Axes count
// from the end when negative, as in PyTorch; an axis, permutation or range
// that does not fit panics with a *UsageError, shapes that do not fit with a
// *ShapeError, naming the op and the shapes.

// maxLayoutRank is the most dimensions the copy kernels take.
const maxLayoutRank = 8

// Permute returns x with its axes reordered: axis i of the result is axis
// perm[i] of x (torch.permute). perm must name every axis of x once.
func Permute(x *Tensor, perm ...int) *Tensor {
	const op = "Permute"
	sameDevice(op, x)
	r := len(x.shape)
	checkRank(op, x.shape)
	if len(perm) != r {
		usagePanic(op, "permutation %v of %d axes for shape %v", perm, len(perm), x.shape)
	}
	seen := make([]bool, r)
	p := make([]int, r)
	for i, a := range perm {
		if a < -r || a >= r {
			usagePanic(op, "axis %d of permutation %v out of range for shape %v", a, perm, x.shape)
		}
		if a < 0 {
			a += r
		}
		if seen[a] {
			usagePanic(op, "permutation %v names axis %d twice", perm, a)
		}
		seen[a] = true
		p[i] = a
	}
	st := stridesOf(x.shape)
	shape, strides := make([]int, r), make([]int, r)
	for i, a := range p {
		shape[i], strides[i] = x.shape[a], st[a]
	}
	out := newOut(x.dev, x.dtype, shape, x)
	copyStrided(op, out, x, strides, 0, -1, 0, 0)
	return out
}

// Transpose returns x with axes d0 and d1 swapped (torch.transpose).
func Transpose(x *Tensor, d0, d1 int) *Tensor {
	const op = "Transpose"
	sameDevice(op, x)
	a, b := checkAxis(op, x, d0), checkAxis(op, x, d1)
	perm := make([]int, len(x.shape))
	for i := range perm {
		perm[i] = i
	}
	perm[a], perm[b] = b, a
	return Permute(x, perm...)
}

// Narrow returns elements [start, start+length) of x along axis
// (torch.narrow); a negative start counts from the end. length must be at
// least 1 (tensors have no empty dimensions).
func Narrow(x *Tensor, axis, start, length int) *Tensor {
	const op = "Narrow"
	sameDevice(op, x)
	checkRank(op, x.shape)
	ax := checkAxis(op, x, axis)
	size := x.shape[ax]
	if start < 0 {
		start += size
	}
	if start < 0 || length < 1 || start+length > size {
		usagePanic(op, "range start %d, length %d outside axis %d of length %d (shape %v)", start, length, ax, size, x.shape)
	}
	shape := slices.Clone(x.shape)
	shape[ax] = length
	st := stridesOf(x.shape)
	out := newOut(x.dev, x.dtype, shape, x)
	copyStrided(op, out, x, st, start*st[ax], -1, 0, 0)
	return out
}

// Concat joins xs along axis (torch.cat): they must have one dtype and
// device and equal shapes except along axis.
func Concat(axis int, xs ...*Tensor) *Tensor {
	const op = "Concat"
	if len(xs) == 0 {
		usagePanic(op, "no tensors")
	}
	sameDevice(op, xs...)
	ax := checkAxis(op, xs[0], axis)
	shapes := make([][]int, len(xs))
	for i, x := range xs {
		shapes[i] = x.shape
	}
	return concat(op, ax, xs, shapes)
}

// Stack joins xs, all of one shape, dtype and device, along a new axis
// (torch.stack), which may be any of [-(rank+1), rank].
func Stack(axis int, xs ...*Tensor) *Tensor {
	const op = "Stack"
	if len(xs) == 0 {
		usagePanic(op, "no tensors")
	}
	sameDevice(op, xs...)
	r := len(xs[0].shape)
	if axis < -(r+1) || axis > r {
		usagePanic(op, "axis %d out of range for stacking shape %v", axis, xs[0].shape)
	}
	if axis < 0 {
		axis += r + 1
	}
	shapes := make([][]int, len(xs))
	for i, x := range xs {
		if !slices.Equal(x.shape, xs[0].shape) {
			shapePanic(op, xs[0].shape, x.shape, "tensor %d differs from tensor 0", i)
		}
		shapes[i] = slices.Insert(slices.Clone(x.shape), axis, 1)
	}
	return concat(op, axis, xs, shapes)
}

// concat joins xs, taken with the given shapes (their own, or with a 1
// inserted for Stack), along axis ax: one dispatch per input writes its
// slab of the output.
func concat(op string, ax int, xs []*Tensor, shapes [][]int) *Tensor {
	checkRank(op, shapes[0])
	shape := slices.Clone(shapes[0])
	shape[ax] = 0
	for i, x := range xs {
		s := shapes[i]
		if x.dtype != xs[0].dtype {
			panic(&DTypeError{Op: op, Got: x.dtype, Want: fmt.Sprintf("%s, the dtype of tensor 0", xs[0].dtype)})
		}
		if len(s) != len(shapes[0]) {
			shapePanic(op, xs[0].shape, x.shape, "tensor %d has another rank", i)
		}
		for d := range s {
			if d != ax && s[d] != shapes[0][d] {
				shapePanic(op, xs[0].shape, x.shape, "tensor %d differs outside axis %d", i, ax)
			}
		}
		shape[ax] += s[ax]
	}
	out := newOut(xs[0].dev, xs[0].dtype, shape, xs...)
	off := 0
	for i, x := range xs {
		st := stridesOf(shapes[i])
		// x's element at the output's index 0 would sit off rows before its
		// own start: the kernel's offsets wrap modulo 2^32.
		copyStrided(op, out, x, st, -off*st[ax], ax, off, off+shapes[i][ax])
		off += shapes[i][ax]
	}
	return out
}

// Gather returns x's elements picked along axis by idx (torch.gather): the
// result has idx's shape and x's dtype, and element (i0, ..., ik, ...) is
// x at the same index except along axis, where it is idx's element there.
// idx is Int32 with x's rank and no dimension longer than x's outside axis.
// An index outside [0, len) along axis, negative ones included, gives quiet
// NaN and raises the device's assert as IndexSelect does, Row the index's
// flat position in idx; x must be floating (*DTypeError otherwise).
func Gather(x *Tensor, axis int, idx *Tensor) *Tensor {
	const op = "Gather"
	sameDevice(op, x, idx)
	checkRank(op, x.shape)
	ax := checkAxis(op, x, axis)
	if !x.dtype.floating() {
		panic(&DTypeError{Op: op, Got: x.dtype, Want: wantFloating + " x"})
	}
	if idx.dtype != Int32 {
		panic(&DTypeError{Op: op, Got: idx.dtype, Want: "int32 indices"})
	}
	if len(idx.shape) != len(x.shape) {
		shapePanic(op, x.shape, idx.shape, "idx must have x's rank")
	}
	for d := range idx.shape {
		if d != ax && idx.shape[d] > x.shape[d] {
			shapePanic(op, x.shape, idx.shape, "idx is longer than x along axis %d", d)
		}
	}
	out := newOut(x.dev, x.dtype, idx.shape, x, idx)
	if out.err != nil {
		return out
	}
	dims, strides, pad := padded(idx.shape, stridesOf(x.shape))
	p := kernels.GatherPush{N: u32(out.n), Axis: u32(ax + pad), Bound: u32(x.shape[ax])}
	p.D0, p.D1, p.D2, p.D3, p.D4, p.D5, p.D6, p.D7 = dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], dims[7]
	p.S0, p.S1, p.S2, p.S3, p.S4, p.S5, p.S6, p.S7 = strides[0], strides[1], strides[2], strides[3], strides[4], strides[5], strides[6], strides[7]
	words := out.n
	if !x.dtype.wide() {
		words = (out.n + 1) / 2
	}
	recordInto(op, func() error {
		return withAssert(out.dev, func(rec *vk.Buffer) error {
			return kernels.Gather(out.dev, groups1D(out, words), kernels.GatherSpec{In0DT: x.dtype.code(), AssertOp: assertGather}, p,
				kernels.GatherBind{X: x.buf, Idx: idx.buf, D: out.buf, Assert: rec})
		})
	}, out)
	return out
}

// copyStrided records copy_nd: out (contiguous, of rank at most 8) gets
// x[base + sum ik*strides[k]] at index (i0, ...), for the elements whose
// index along axis lies in [lo, hi) (all of them when axis is -1).
func copyStrided(op string, out, x *Tensor, strides []int, base, axis, lo, hi int) {
	if out.err != nil {
		return
	}
	first, last := 0, out.n-1
	if axis >= 0 {
		inner := 1
		for _, s := range out.shape[axis+1:] {
			inner *= s
		}
		first = lo * inner
		last = out.n - (out.shape[axis]-hi)*inner - 1
	}
	shape, st, ax := mergeDims(out.shape, strides, axis)
	dims, pst, pad := padded(shape, st)
	p := kernels.CopyNdPush{N: u32(out.n), Base: uint32(int32(base)), Axis: maxLayoutRank, Hi: 1}
	if ax >= 0 {
		p.Axis, p.Lo, p.Hi = u32(ax+pad), u32(lo), u32(hi)
	}
	w0, w1 := first, last+1
	if !out.dtype.wide() {
		w0, w1 = first/2, last/2+1
	}
	p.W0, p.W1 = u32(w0), u32(w1)
	p.D0, p.D1, p.D2, p.D3, p.D4, p.D5, p.D6, p.D7 = dims[0], dims[1], dims[2], dims[3], dims[4], dims[5], dims[6], dims[7]
	p.S0, p.S1, p.S2, p.S3, p.S4, p.S5, p.S6, p.S7 = pst[0], pst[1], pst[2], pst[3], pst[4], pst[5], pst[6], pst[7]
	err := kernels.CopyNd(out.dev, groups1D(out, w1-w0), kernels.CopyNdSpec{In0DT: x.dtype.code(), Rank: u32(len(shape))}, p,
		kernels.CopyNdBind{X: x.buf, D: out.buf})
	if err != nil {
		out.fail(fmt.Errorf("tensor: %s: %w", op, err))
	}
}

// mergeDims drops the length-1 dimensions of a strided copy and merges
// neighbours that the source walks as one (outer stride = inner stride *
// inner length), keeping axis (-1 for none) apart; it returns the merged
// shape and strides, at least one dimension, and axis's place among them.
// Each dimension costs the kernel a division per element.
func mergeDims(shape, strides []int, axis int) (ms, mst []int, ax int) {
	ax = -1
	for i, s := range shape {
		if s == 1 && i != axis {
			continue
		}
		if n := len(ms); n > 0 && i != axis && ax != n-1 && mst[n-1] == strides[i]*s {
			ms[n-1] *= s
			mst[n-1] = strides[i]
			continue
		}
		ms, mst = append(ms, s), append(mst, strides[i])
		if i == axis {
			ax = len(ms) - 1
		}
	}
	if len(ms) == 0 {
		return []int{1}, []int{0}, -1
	}
	return ms, mst, ax
}

// padded returns shape and strides as the kernels' 8 dimensions, padded in
// front with length-1 axes, and the number of axes added.
func padded(shape, strides []int) (dims, st [maxLayoutRank]uint32, pad int) {
	pad = maxLayoutRank - len(shape)
	for i := range dims {
		dims[i] = 1
	}
	for i, s := range shape {
		dims[pad+i] = u32(s)
		st[pad+i] = uint32(int32(strides[i]))
	}
	return dims, st, pad
}

// stridesOf returns the row-major strides, in elements, of shape.
func stridesOf(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= shape[i]
	}
	return st
}

// checkRank panics unless shape has at most maxLayoutRank dimensions.
func checkRank(op string, shape []int) {
	if len(shape) > maxLayoutRank {
		usagePanic(op, "shape %v has more than %d dimensions", shape, maxLayoutRank)
	}
}

// GatherBackward returns the gradient of Gather(x, axis, idx) with respect
// to x, for x of shape xShape, from dy, the gradient of its result (idx's
// shape, any float dtype): a Float32 tensor of xShape whose every element is
// the sum, in fp32 and a fixed order, of the elements of dy that Gather took
// from it (0 for none). An index out of range has nowhere to add to: it
// makes NaN every element of the gradient along axis at its other
// coordinates (so that a gradient scaler skips the step) and raises the
// device's assert as Gather does.
func GatherBackward(dy, idx *Tensor, axis int, xShape ...int) *Tensor {
	const op = "GatherBackward"
	sameDevice(op, dy, idx)
	checkFloating(op, Float32, dy)
	if idx.dtype != Int32 {
		panic(&DTypeError{Op: op, Got: idx.dtype, Want: "int32 indices"})
	}
	if !slices.Equal(dy.shape, idx.shape) {
		shapePanic(op, dy.shape, idx.shape, "dy must have idx's shape")
	}
	checkShape(op, xShape)
	checkRank(op, xShape)
	r := len(xShape)
	if len(idx.shape) != r {
		shapePanic(op, xShape, idx.shape, "idx must have x's rank")
	}
	if axis < -r || axis >= r {
		usagePanic(op, "axis %d out of range for shape %v", axis, xShape)
	}
	if axis < 0 {
		axis += r
	}
	for d := range xShape {
		if d != axis && idx.shape[d] > xShape[d] {
			shapePanic(op, xShape, idx.shape, "idx is longer than x along axis %d", d)
		}
	}
	out := newOut(dy.dev, Float32, xShape, dy, idx)
	grid := groups1D(out, out.n)
	per := ceilDiv(out.n, int(grid[0])*int(kernels.LocalSize(out.dev)))
	if !checkLoopsN(out, op, per*(idx.shape[axis]+1), "an index axis of %d", idx.shape[axis]) {
		return out
	}
	xd, _, pad := padded(xShape, make([]int, r))
	id, _, _ := padded(idx.shape, make([]int, r))
	p := kernels.GatherBackwardPush{N: u32(out.n), Axis: u32(axis + pad), Len: u32(idx.shape[axis])}
	p.X0, p.X1, p.X2, p.X3, p.X4, p.X5, p.X6, p.X7 = xd[0], xd[1], xd[2], xd[3], xd[4], xd[5], xd[6], xd[7]
	p.I0, p.I1, p.I2, p.I3, p.I4, p.I5, p.I6, p.I7 = id[0], id[1], id[2], id[3], id[4], id[5], id[6], id[7]
	recordInto(op, func() error {
		return withAssert(out.dev, func(rec *vk.Buffer) error {
			return kernels.GatherBackward(out.dev, grid, kernels.GatherBackwardSpec{In0DT: dy.dtype.code(), AssertOp: assertGatherBackward}, p,
				kernels.GatherBackwardBind{Dy: dy.buf, Idx: idx.buf, Dx: out.buf, Assert: rec})
		})
	}, out)
	return out
}
