package tensor

import "github.com/vkamp/vkamp/vk"

// Cast returns t converted to dtype dt (a copy when dt is t's dtype).
// fp32 -> fp16 rounds to nearest even, overflowing to inf; fp16 -> fp32 is
// exact.
func Cast(t *Tensor, dt DType) *Tensor {
	sameDevice("Cast", t)
	if !dt.supported() {
		panic(&DTypeError{Op: "Cast", Got: dt, Want: "float32 or float16"})
	}
	out := newOut(t.dev, dt, t.shape, t)
	n := uint32(t.n)
	switch {
	case t.dtype == Float32 && dt == Float16:
		launch(out, "cast_f32_f16", nil, groups1D(out, (t.n+1)/2), []uint32{n}, t, out)
	case t.dtype == Float16 && dt == Float32:
		launch(out, "cast_f16_f32", nil, groups1D(out, t.n), []uint32{n}, t, out)
	case dt == Float16:
		launch(out, "copy16", nil, groups1D(out, (t.n+1)/2), []uint32{n}, t, out)
	default:
		launch(out, "copy32", nil, groups1D(out, t.n), []uint32{n}, t, out)
	}
	return out
}

// Fill sets every element of t to v (rounded to t's dtype) and returns t.
func Fill(t *Tensor, v float32) *Tensor {
	sameDevice("Fill", t)
	n := uint32(t.n)
	if t.dtype == Float16 {
		launch(t, "fill16", nil, groups1D(t, (t.n+1)/2), []uint32{n, uint32(f16bits(v))}, t)
	} else {
		launch(t, "fill32", nil, groups1D(t, t.n), []uint32{n, f32bits(v)}, t)
	}
	return t
}

// Zeros returns a tensor of zeros.
func Zeros(d *vk.Device, dt DType, shape ...int) *Tensor { return Fill(New(d, dt, shape...), 0) }

// Full returns a tensor with every element v.
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
