package tensor

import (
	"math"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// Arange returns the 1-D tensor [start, start+step, start+2*step, ...] of
// the values below end (above it for a negative step), computed on the
// device, as PyTorch's arange(start, end, step, dtype=dt): its length is
// ceil((end-start)/step), computed in float64 as PyTorch computes it.
// Element i is start + i*step: in int32 arithmetic for Int32 (start, end
// and step must then be integers within int32), else in fp32 with start
// and step first rounded to fp32, i*step and the add each rounded once
// (exact for i below 2^24) and the sum rounded once to dt.
//
// A step of 0, a step whose sign does not lead from start to end, an
// empty range (vkamp has no empty tensors: PyTorch would return one), a
// length of 2^31 or more, a non-finite argument or one an Int32 range
// cannot hold panics with a *UsageError, an invalid dt with a *DTypeError.
func Arange(d *vk.Device, dt DType, start, end, step float64) *Tensor {
	const op = "Arange"
	if d == nil {
		usagePanic(op, "nil device")
	}
	if !dt.valid() {
		panic(&DTypeError{Op: op, Got: dt, Want: "float32, float16, bfloat16 or int32"})
	}
	for _, v := range []float64{start, end, step} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			usagePanic(op, "arguments (%v, %v, %v) must be finite", start, end, step)
		}
		if dt == Int32 && (v != math.Trunc(v) || v < math.MinInt32 || v > math.MaxInt32) {
			usagePanic(op, "arguments (%v, %v, %v) must be int32 integers for an int32 range", start, end, step)
		}
	}
	if step == 0 {
		usagePanic(op, "step must be nonzero")
	}
	if (step > 0 && end < start) || (step < 0 && end > start) {
		usagePanic(op, "the step %v does not lead from %v to %v", step, start, end)
	}
	size := math.Ceil((end - start) / step)
	if size < 1 {
		usagePanic(op, "the range [%v, %v) with step %v is empty", start, end, step)
	}
	if size > math.MaxInt32 {
		usagePanic(op, "the range [%v, %v) with step %v has %v elements, 2^31 or more", start, end, step, size)
	}
	p := kernels.ArangePush{N: uint32(size)}
	if dt == Int32 {
		p.Start, p.Step = uint32(int32(start)), uint32(int32(step))
	} else {
		s, st := float32(start), float32(step)
		if math.IsInf(float64(s), 0) || math.IsInf(float64(st), 0) {
			usagePanic(op, "start %v and step %v must be finite in float32", start, step)
		}
		p.Start, p.Step = math.Float32bits(s), math.Float32bits(st)
	}
	out := New(d, dt, int(size))
	if out.err == nil {
		launched(out, kernels.Arange(d, pairs(out), kernels.ArangeSpec{OutDT: dt.code()}, p, kernels.ArangeBind{D: out.buf}))
	}
	return out
}
