package tensor

import (
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// Softmax along any axis, and the backward passes of softmax and
// log-softmax. The last axis (or one followed only by axes of length 1) is
// one fused row kernel; another axis is moved last with Permute, reduced
// there and moved back. Inputs are Float32, Float16 or BFloat16 (Int32
// panics with a *DTypeError); sums are accumulated in fp32 and the results
// are Float32, as Softmax's.

// SoftmaxAxis returns exp(x - m) / sum(exp(x - m)) along axis (negative
// counts from the end), m being the maximum along it, as a Float32 tensor
// of x's shape. SoftmaxAxis(x, -1) is Softmax(x).
func SoftmaxAxis(x *Tensor, axis int) *Tensor {
	return softmaxAlong("SoftmaxAxis", softmaxRows, x, axis)
}

// LogSoftmaxAxis returns (x - m) - log(sum(exp(x - m))) along axis, as a
// Float32 tensor of x's shape.
func LogSoftmaxAxis(x *Tensor, axis int) *Tensor {
	return softmaxAlong("LogSoftmaxAxis", logSoftmaxRows, x, axis)
}

// SoftmaxBackward returns the gradient of a softmax along axis with respect
// to its input, from its output y and the gradient dy of that output:
// dx = y * (dy - sum(dy * y)) along axis, as a Float32 tensor of y's shape.
func SoftmaxBackward(y, dy *Tensor, axis int) *Tensor {
	return softmaxBackAlong("SoftmaxBackward", softmaxBackRows, y, dy, axis)
}

// LogSoftmaxBackward returns the gradient of a log-softmax along axis with
// respect to its input, from its output y and the gradient dy of that
// output: dx = dy - exp(y) * sum(dy) along axis, as a Float32 tensor of y's
// shape.
func LogSoftmaxBackward(y, dy *Tensor, axis int) *Tensor {
	return softmaxBackAlong("LogSoftmaxBackward", logSoftmaxBackRows, y, dy, axis)
}

// softmaxAlong runs row kernel k along axis of x.
func softmaxAlong(op string, k softmaxKernel, x *Tensor, axis int) *Tensor {
	sameDevice(op, x)
	checkFloating(op, Float32, x)
	if len(x.shape) == 0 {
		usagePanic(op, "a scalar has no axis")
	}
	ax := checkAxis(op, x, axis)
	return alongLast(op, ax, x.shape, func(ts []*Tensor, rows, cols int) *Tensor {
		out := newOut(ts[0].dev, Float32, ts[0].shape, ts[0])
		softmaxLaunch(op, out, rows, cols, func(grid [3]uint32, p kernels.SoftmaxPush) error {
			return k(out.dev, grid, reduceSpec(out, ts[0]), p, xyBind{X: ts[0].buf, Y: out.buf})
		})
		return out
	}, x)
}

// softmaxBackAlong runs backward row kernel k along axis of y and dy.
func softmaxBackAlong(op string, k softmaxBackKernel, y, dy *Tensor, axis int) *Tensor {
	sameDevice(op, y, dy)
	checkFloating(op, Float32, y, dy)
	if !slices.Equal(y.shape, dy.shape) {
		shapePanic(op, y.shape, dy.shape, "dy must have y's shape")
	}
	if len(y.shape) == 0 {
		usagePanic(op, "a scalar has no axis")
	}
	ax := checkAxis(op, y, axis)
	return alongLast(op, ax, y.shape, func(ts []*Tensor, rows, cols int) *Tensor {
		out := newOut(ts[0].dev, Float32, ts[0].shape, ts...)
		softmaxLaunch(op, out, rows, cols, func(grid [3]uint32, p kernels.SoftmaxPush) error {
			s := softmaxBackSpec{LocalSizeX: uint32(reduceLocal(out)), In0DT: ts[0].dtype.code(), In1DT: ts[1].dtype.code()}
			return k(out.dev, grid, s, p, softmaxBackBind{Y: ts[0].buf, Dy: ts[1].buf, Dx: out.buf})
		})
		return out
	}, y, dy)
}

// alongLast applies rowsOp, which works along the last axis of tensors
// viewed as [rows, cols], along axis ax of ts (all of shape): directly when
// every later axis has length 1, else between two Permutes that move ax
// last and back.
func alongLast(op string, ax int, shape []int, rowsOp func(ts []*Tensor, rows, cols int) *Tensor, ts ...*Tensor) *Tensor {
	n, cols, inner := ts[0].n, shape[ax], 1
	for _, s := range shape[ax+1:] {
		inner *= s
	}
	if inner == 1 {
		return rowsOp(ts, n/cols, cols)
	}
	checkRank(op, shape)
	r := len(shape)
	perm := make([]int, 0, r)
	for i := range r {
		if i != ax {
			perm = append(perm, i)
		}
	}
	perm = append(perm, ax)
	back := make([]int, r)
	for i, a := range perm {
		back[a] = i
	}
	moved := make([]*Tensor, len(ts))
	for i, t := range ts {
		moved[i] = Permute(t, perm...)
		defer moved[i].Release() // the device keeps it until the kernels have run
	}
	res := rowsOp(moved, n/cols, cols)
	defer res.Release()
	return Permute(res, back...)
}

// softmaxLaunch checks the loop limit of a softmax-family row kernel over
// rows of cols and records it with launch into out.
func softmaxLaunch(op string, out *Tensor, rows, cols int, launch func(grid [3]uint32, p kernels.SoftmaxPush) error) {
	if out.err != nil {
		return
	}
	seg := segment(out, cols)
	grid := rowGroups(out, rows, seg)
	if !checkLoopsN(out, op, rowLoops(out, rows, seg, grid, 3*ceilDiv(cols, seg)), "a row of %d", cols) {
		return
	}
	p := kernels.SoftmaxPush{Rows: uint32(rows), Cols: uint32(cols), Seg: uint32(seg)}
	launched(out, launch(grid, p))
}

// The backward row kernels share one interface, as the forward ones do.
type (
	softmaxBackSpec = struct {
		LocalSizeX   uint32
		In0DT, In1DT kernels.DType
	}
	softmaxBackBind   = struct{ Y, Dy, Dx *vk.Buffer }
	softmaxBackKernel = func(*vk.Device, [3]uint32, softmaxBackSpec, kernels.SoftmaxPush, softmaxBackBind) error
)

var (
	softmaxBackRows    = withSoftmaxBackTex(asBack(kernels.SoftmaxBackwardForms))
	logSoftmaxBackRows = withSoftmaxBackTex(asBack(kernels.LogSoftmaxBackwardForms))
)

// asBack is asRows for the softmax backward kernels.
func asBack[S ~softmaxBackSpec, B ~softmaxBackBind](k kernels.Forms[S, kernels.SoftmaxPush, B]) kernels.Forms[softmaxBackSpec, kernels.SoftmaxPush, softmaxBackBind] {
	conv := func(k func(*vk.Device, [3]uint32, S, kernels.SoftmaxPush, B) error) softmaxBackKernel {
		return func(d *vk.Device, g [3]uint32, s softmaxBackSpec, p kernels.SoftmaxPush, b softmaxBackBind) error {
			return k(d, g, S(s), p, B(b))
		}
	}
	return kernels.Forms[softmaxBackSpec, kernels.SoftmaxPush, softmaxBackBind]{Plain: conv(k.Plain), Texel: conv(k.Texel)}
}
