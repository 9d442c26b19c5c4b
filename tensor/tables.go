package tensor

import (
	"slices"
	"sync"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// A unary op from a 16-bit dtype to a 16-bit dtype has 65536 inputs. Where
// its arithmetic costs far more than a memory access (GELU's erfc and exp)
// and the texel forms serve (CPU drivers), it looks its results up in a
// table of all of them, made once per device by running the op's own
// kernel on every value: the same bits (a NaN stays a NaN, its sign
// aside: the kernel's own differs between a block's elements), cheaper.
// Its backward, dy * f'(x), looks f'(x) up in fp32 (any dtype of dy and
// of the result; x 16-bit) and multiplies as its kernel does. lavapipe,
// tools/bench, 16M elements, an AMD EPYC, 2 cores, alternated: GELU of
// fp16 6.07 -> 11.2 GB/s (0.14x -> 0.27x of copy/buffer), its backward
// 6.69 -> 11.8 GB/s (0.16x -> 0.28x). A lookup is a texel fetch, mostly
// from cache. A device keeps each table, 128 or 256 KiB, from the op's
// first call until it closes.

// tablesOff turns the tables off, for tests that compare them with the
// kernels they stand for.
var tablesOff bool

// tableKey names a table: an op and its input and output dtypes (fp32 for
// a backward op's derivatives).
type tableKey struct {
	op      string
	in, out DType
}

// opTable holds a device's table for one key, once made.
type opTable struct {
	mu sync.Mutex
	t  *Tensor // the results for the inputs' bits 0..65535, in order
}

// tabledOp is unaryOp for ops worth a table (alpha unused). Inside a
// capture a table not yet made is not made (its upload would go into the
// graph): the kernel serves, with the same bits, and the table is made at
// the next call outside one.
func tabledOp[S ~unarySpec, B ~unaryBind](op string, k kernels.Forms[S, kernels.EwisePush, B],
	x *Tensor, out DType) *Tensor {
	compute := func(x *Tensor) *Tensor { return unaryOp(op, k, x, 0, out) }
	x.live(op)
	if !tableServes(x) || out.Size() != 2 {
		return compute(x)
	}
	tab := table(x.dev, tableKey{op, x.dtype, out}, compute)
	if tab == nil {
		return compute(x)
	}
	checkFloating(op, out, x)
	o := newOut(x.dev, out, x.shape, x)
	if o.err == nil {
		launched(o, kernels.Lut16(o.dev, octs(o), kernels.Lut16Spec{}, kernels.Lut16Push{N: uint32(x.n)},
			kernels.Lut16Bind{A: x.buf, Table: tab.buf, D: o.buf}))
	}
	return o
}

// tabledGradOp is binaryOp for the backward of an op worth a table, dy *
// f'(x): its table holds f'(x) in fp32, the kernel's with dy = 1, and
// lut16_grad multiplies as the kernel does; captures as in tabledOp.
func tabledGradOp[S ~binarySpec, B ~binaryBind](op string, k kernels.Forms[S, kernels.EwisePush, B],
	dy, x *Tensor, out DType) *Tensor {
	compute := func(dy, x *Tensor, out DType) *Tensor { return binaryOp(op, k, dy, x, 0, out) }
	sameDevice(op, dy, x)
	if !tableServes(x) || dy.err != nil || !texelsServe(dy.dev, dy.buf) || !slices.Equal(dy.shape, x.shape) {
		return compute(dy, x, out)
	}
	tab := table(x.dev, tableKey{op, x.dtype, Float32}, func(all *Tensor) *Tensor {
		ones := Full(all.dev, Float32, 1, all.n)
		defer ones.Release()
		return compute(ones, all, Float32)
	})
	if tab == nil {
		return compute(dy, x, out)
	}
	checkFloating(op, out, dy, x)
	o := newOut(x.dev, out, x.shape, dy, x)
	if o.err == nil {
		s := kernels.Lut16GradSpec{In0DT: dy.dtype.code(), OutDT: out.code()}
		launched(o, kernels.Lut16Grad(o.dev, octs(o), s, kernels.Lut16GradPush{N: uint32(x.n)},
			kernels.Lut16GradBind{Dy: dy.buf, X: x.buf, Table: tab.buf, D: o.buf}))
	}
	return o
}

// tableServes reports whether a table may stand for a kernel on x: tables
// are on, x is a 16-bit tensor without an error, and texel forms serve it.
func tableServes(x *Tensor) bool {
	return !tablesOff && x.err == nil && x.dtype.Size() == 2 && texelsServe(x.dev, x.buf)
}

// table returns d's table for key, making it with build from all the input
// dtype's values on the first call outside a capture; nil where it is not
// made. A failed making is tried again at the next call.
func table(d *vk.Device, key tableKey, build func(all *Tensor) *Tensor) *Tensor {
	ot := d.Local(key, func() any { return &opTable{} }).(*opTable)
	ot.mu.Lock()
	defer ot.mu.Unlock()
	if ot.t == nil && !d.Capturing() {
		all := allValues(d, key.in)
		t := build(all)
		all.Release()
		if t.err != nil {
			t.Release()
			return nil
		}
		ot.t = t
	}
	return ot.t
}

// allValues returns the 65536 values of the 16-bit dtype dt, in order of
// their bits.
func allValues(d *vk.Device, dt DType) *Tensor {
	if dt == BFloat16 {
		bits := make([]uint16, 1<<16)
		for i := range bits {
			bits[i] = uint16(i)
		}
		return FromBFloat16(d, bits, len(bits))
	}
	vals := make([]float16.Float16, 1<<16)
	for i := range vals {
		vals[i] = float16.Frombits(uint16(i))
	}
	return FromFloat16(d, vals, len(vals))
}
