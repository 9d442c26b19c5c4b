package tensor

import (
	"fmt"
	"slices"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// Broadcasting follows NumPy and PyTorch: shapes are aligned at their last
// dimension, a missing leading dimension counts as 1, and two dimensions
// fit when they are equal or one of them is 1, which is then repeated. The
// result has the larger size of each dimension. Add, Sub, Mul, Div, Equal,
// Where and MaskedFill broadcast; two same-shaped inputs of Add, Sub and
// Mul take the plain elementwise kernel.
//
// The broadcasting kernel (shaders/include/broadcast.glsl) reads each input
// through a stride per output dimension, 0 where the input is repeated.
// Adjacent dimensions that every input walks contiguously (or repeats
// alike) merge first, so the kernel's limit of maxBroadcastDims applies to
// what is left: [2,1,3,1,5,1,7,1] + [1,4,1,6,1,8,1,9] does not fit.

// maxBroadcastDims is the most dimensions, after merging, that the kernel's
// push constants describe.
const maxBroadcastDims = 6

// BroadcastShape returns the shape that shapes broadcast to, and false if
// two of them do not fit.
func BroadcastShape(shapes ...[]int) ([]int, bool) {
	r := 0
	for _, s := range shapes {
		r = max(r, len(s))
	}
	out := make([]int, r)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		for j, d := range s {
			o := &out[r-len(s)+j]
			switch {
			case d == *o || d == 1:
			case *o == 1:
				*o = d
			default:
				return nil, false
			}
		}
	}
	return out, true
}

// broadcastPush describes out's shape and each input's strides (a, b, c in
// order) to the broadcasting kernel, after merging dimensions. It panics
// with a UsageError naming op when more than maxBroadcastDims are left.
func broadcastPush(op string, out []int, ins ...[]int) kernels.BroadcastPush {
	type dim struct {
		size    int
		strides [3]int
	}
	var dims []dim
	for j, size := range out {
		if size == 1 {
			continue // no index moves along it
		}
		d := dim{size: size}
		for k, s := range ins {
			jj := j - (len(out) - len(s))
			if jj < 0 || s[jj] == 1 {
				continue // repeated: stride 0
			}
			st := 1
			for _, x := range s[jj+1:] {
				st *= x
			}
			d.strides[k] = st
		}
		// Merge into the previous dimension when every input steps over
		// this one whole to move along that one.
		if n := len(dims); n > 0 {
			p := &dims[n-1]
			fits := true
			for k := range p.strides {
				fits = fits && p.strides[k] == d.strides[k]*d.size
			}
			if fits {
				p.size *= d.size
				p.strides = d.strides
				continue
			}
		}
		dims = append(dims, d)
	}
	if len(dims) > maxBroadcastDims {
		usagePanic(op, "broadcasting %v needs %d dimensions after merging; the kernel takes %d", ins, len(dims), maxBroadcastDims)
	}
	var size [maxBroadcastDims]uint32
	var st [3][maxBroadcastDims]uint32
	for i := range size {
		size[i] = 1
	}
	off := maxBroadcastDims - len(dims)
	for i, d := range dims {
		size[off+i] = uint32(d.size)
		for k := range st {
			st[k][off+i] = uint32(d.strides[k])
		}
	}
	n := 1
	for _, s := range out {
		n *= s
	}
	a, b, c := st[0], st[1], st[2]
	return kernels.BroadcastPush{N: uint32(n),
		D0: size[0], D1: size[1], D2: size[2], D3: size[3], D4: size[4], D5: size[5],
		A0: a[0], A1: a[1], A2: a[2], A3: a[3], A4: a[4], A5: a[5],
		B0: b[0], B1: b[1], B2: b[2], B3: b[3], B4: b[4], B5: b[5],
		C0: c[0], C1: c[1], C2: c[2], C3: c[3], C4: c[4], C5: c[5]}
}

// broadcastShape is BroadcastShape for op, panicking with a ShapeError that
// names the first two shapes when they do not fit.
func broadcastShape(op string, ts ...*Tensor) []int {
	shapes := make([][]int, len(ts))
	for i, t := range ts {
		shapes[i] = t.shape
	}
	out, ok := BroadcastShape(shapes...)
	if !ok {
		// Shapes that fit pairwise fit together: name a pair that does not.
		for i := range shapes {
			for j := i + 1; j < len(shapes); j++ {
				if _, ok := BroadcastShape(shapes[i], shapes[j]); !ok {
					shapePanic(op, shapes[i], shapes[j], "shapes do not broadcast (aligned at the last dimension, each pair of sizes must be equal or contain a 1)")
				}
			}
		}
	}
	return out
}

// broadcastOp is binaryOp for two inputs that may broadcast: same shapes
// take the plain kernel and its texel form (both nil for an op without
// them), others the broadcasting kernel.
func broadcastOp[S ~binarySpec, B ~binaryBind, S2 ~binarySpec, B2 ~binaryBind](op string,
	plain kernels.Forms[S, kernels.EwisePush, B],
	bcast func(*vk.Device, [3]uint32, S2, kernels.BroadcastPush, B2) error,
	a, b *Tensor, out DType) *Tensor {
	sameDevice(op, a, b)
	if plain.Plain != nil && slices.Equal(a.shape, b.shape) {
		return binaryOp(op, plain, a, b, 0, out)
	}
	shape := broadcastShape(op, a, b)
	checkFloating(op, out, a, b)
	p := broadcastPush(op, shape, a.shape, b.shape)
	o := newOut(a.dev, out, shape, a, b)
	if o.err != nil {
		return o
	}
	s := S2(binarySpec{In0DT: a.dtype.code(), In1DT: b.dtype.code(), OutDT: out.code()})
	launched(o, bcast(o.dev, pairs(o), s, p, B2(binaryBind{A: a.buf, B: b.buf, D: o.buf})))
	return o
}

// noPlain is the same-shape kernel family of an op that has only the
// broadcasting kernel.
var noPlain kernels.Forms[kernels.BcastDivSpec, kernels.EwisePush, kernels.BcastDivBind]

// Div returns a / b, broadcasting, with IEEE division's specials (x/0 is
// ±inf, 0/0 NaN).
func Div(a, b *Tensor, out DType) *Tensor {
	return broadcastOp("Div", noPlain, kernels.BcastDiv, a, b, out)
}

// Equal returns 1 where a == b and 0 elsewhere, broadcasting, in the
// floating dtype out. NaN equals nothing, itself included.
func Equal(a, b *Tensor, out DType) *Tensor {
	return broadcastOp("Equal", noPlain, kernels.BcastEq, a, b, out)
}

// checkInt32 panics with a DTypeError naming op when t is not Int32.
func checkInt32(op, what string, t *Tensor) {
	if t.dtype != Int32 {
		panic(&DTypeError{Op: op, Got: t.dtype, Want: fmt.Sprintf("int32 %s", what)})
	}
}

// Where returns a where cond is nonzero and b elsewhere, as torch.where:
// cond (Int32), a and b broadcast together; out names the floating dtype.
func Where(cond, a, b *Tensor, out DType) *Tensor {
	const op = "Where"
	sameDevice(op, cond, a, b)
	shape := broadcastShape(op, cond, a, b)
	checkInt32(op, "condition", cond)
	checkFloating(op, out, a, b)
	p := broadcastPush(op, shape, a.shape, b.shape, cond.shape)
	o := newOut(a.dev, out, shape, cond, a, b)
	if o.err != nil {
		return o
	}
	s := kernels.WhereSpec{In0DT: a.dtype.code(), In1DT: b.dtype.code(), OutDT: out.code()}
	launched(o, kernels.Where(o.dev, pairs(o), s, p, kernels.WhereBind{Cond: cond.buf, A: a.buf, B: b.buf, D: o.buf}))
	return o
}

// MaskedFill returns x with value where mask is nonzero, as
// torch.masked_fill: mask (Int32) broadcasts to x's shape, and the result
// has x's shape and dtype (value rounded to it).
func MaskedFill(x, mask *Tensor, value float32) *Tensor {
	const op = "MaskedFill"
	sameDevice(op, x, mask)
	if shape, ok := BroadcastShape(x.shape, mask.shape); !ok || !slices.Equal(shape, x.shape) {
		shapePanic(op, x.shape, mask.shape, "the mask must broadcast to x's shape")
	}
	checkInt32(op, "mask", mask)
	checkFloating(op, x.dtype, x)
	p := broadcastPush(op, x.shape, x.shape, mask.shape)
	p.Alpha = value
	o := newOut(x.dev, x.dtype, x.shape, x, mask)
	if o.err != nil {
		return o
	}
	s := kernels.MaskedFillSpec{In0DT: x.dtype.code(), OutDT: x.dtype.code()}
	launched(o, kernels.MaskedFill(o.dev, pairs(o), s, p, kernels.MaskedFillBind{X: x.buf, Mask: mask.buf, D: o.buf}))
	return o
}

// Expand returns x broadcast to shape, in dtype out: torch.broadcast_to,
// copied. x's shape must broadcast to shape.
func Expand(x *Tensor, out DType, shape ...int) *Tensor {
	const op = "Expand"
	sameDevice(op, x)
	checkShape(op, shape)
	if b, ok := BroadcastShape(x.shape, shape); !ok || !slices.Equal(b, shape) {
		shapePanic(op, x.shape, shape, "x must broadcast to the shape")
	}
	checkFloating(op, out, x)
	one := Full(x.dev, Float32, 1, 1)
	defer one.Release() // the device keeps it until the kernel has run
	p := broadcastPush(op, shape, x.shape, one.shape)
	o := newOut(x.dev, out, shape, x, one)
	if o.err != nil {
		return o
	}
	// x * 1 is x, bit for bit, NaN, inf and -0 included.
	s := kernels.BcastMulSpec{In0DT: x.dtype.code(), In1DT: Float32.code(), OutDT: out.code()}
	launched(o, kernels.BcastMul(o.dev, pairs(o), s, p, kernels.BcastMulBind{A: x.buf, B: one.buf, D: o.buf}))
	return o
}
