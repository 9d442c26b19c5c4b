package tensor

import (
	"math"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// Cast returns t converted to dtype dt (a copy when dt is t's dtype), for
// any two of the four dtypes, with vkamp's own integer code on every device:
//   - to Float16 or BFloat16: round to nearest even, overflowing to inf; NaN
//     stays NaN, quiet, with its sign and top payload bits;
//   - Float16 or BFloat16 to Float32: exact (from BFloat16, a shift that
//     keeps NaN payloads);
//   - a float to Int32: toward zero, saturating at the int32 range, NaN
//     giving 0;
//   - Int32 to a float: round to nearest even, once (no double rounding
//     through fp32 for the 16-bit dtypes).
func Cast(t *Tensor, dt DType) *Tensor {
	sameDevice("Cast", t)
	if !dt.valid() {
		panic(&DTypeError{Op: "Cast", Got: dt, Want: "float32, float16, bfloat16 or int32"})
	}
	out := newOut(t.dev, dt, t.shape, t)
	if out.err != nil {
		return out
	}
	d, n := out.dev, uint32(t.n)
	if t.dtype == dt && (dt.wide() || t.n%2 == 0) {
		// A same-dtype copy is the driver's buffer copy: on lavapipe a
		// memcpy, 5x the copy kernel's bandwidth (tools/bench stream/copy-f32);
		// an odd count of 16-bit elements keeps copy16, which zeroes the
		// padding half.
		launched(out, d.Copy(out.buf, 0, t.buf, 0, dt.bytes(t.n)))
		return out
	}
	done, err := castTexels(t, out)
	switch from := t.dtype; {
	case done:
	case from == Float32 && dt == Float16:
		err = kernels.CastF32F16(d, pairs(out), kernels.CastF32F16Spec{}, kernels.CastF32F16Push{N: n},
			kernels.CastF32F16Bind{Src: t.buf, Dst: out.buf})
	case from == Float16 && dt == Float32:
		err = kernels.CastF16F32(d, groups1D(out, t.n), kernels.CastF16F32Spec{}, kernels.CastF16F32Push{N: n},
			kernels.CastF16F32Bind{Src: t.buf, Dst: out.buf})
	case from == dt && !dt.wide():
		err = kernels.Copy16(d, pairs(out), kernels.Copy16Spec{}, kernels.Copy16Push{N: n},
			kernels.Copy16Bind{Src: t.buf, Dst: out.buf})
	default:
		err = kernels.Cast(d, pairs(out), kernels.CastSpec{In0DT: from.code(), OutDT: dt.code()}, kernels.CastPush{N: n},
			kernels.CastBind{Src: t.buf, Dst: out.buf})
	}
	launched(out, err)
	return out
}

// Fill sets every element of t to v, converted to t's dtype as Cast
// converts a Float32 (for Int32: toward zero, saturating, NaN giving 0),
// and returns t.
func Fill(t *Tensor, v float32) *Tensor {
	sameDevice("Fill", t)
	if t.err != nil {
		return t
	}
	var word uint32
	switch t.dtype {
	case Float32:
		word = math.Float32bits(v)
	case Float16:
		word = uint32(f16bits(v))
	case BFloat16:
		word = uint32(bf16bits(v))
	case Int32:
		word = uint32(toInt32(v))
	}
	// The driver's buffer fill (a memset on lavapipe), two 16-bit elements
	// a word; the last word of an odd count keeps its padding half zero.
	size, full := t.dtype.bytes(t.n), t.dtype.bytes(t.n)
	if !t.dtype.wide() {
		word |= word << 16
		if t.n%2 == 1 {
			full -= 4
		}
	}
	err := t.dev.Fill(t.buf, 0, full, word)
	if err == nil && full < size {
		err = t.dev.Fill(t.buf, full, 4, word&0xFFFF)
	}
	launched(t, err)
	return t
}

// Zeros returns a tensor of zeros.
func Zeros(d *vk.Device, dt DType, shape ...int) *Tensor { return Fill(New(d, dt, shape...), 0) }

// Full returns a tensor with every element v, converted as Fill converts.
func Full(d *vk.Device, dt DType, v float32, shape ...int) *Tensor {
	return Fill(New(d, dt, shape...), v)
}

// Reshape returns a copy of t with another shape of the same length.
func Reshape(t *Tensor, shape ...int) *Tensor {
	sameDevice("Reshape", t)
	if n := checkShape("Reshape", shape); n != t.n {
		shapePanic("Reshape", t.shape, shape, "%d elements cannot take shape %v", t.n, shape)
	}
	out := Cast(t, t.dtype)
	out.shape = append([]int(nil), shape...)
	return out
}
