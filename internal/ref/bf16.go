package ref

import (
	"math"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/tensor"
)

// F32ToBF16 is shaders/include/dtype.glsl's f32_to_bf16 in Go: the top 16
// bits of f rounded to nearest even, overflowing to inf; NaN keeps its sign
// and top payload bits and is quieted.
func F32ToBF16(f float32) uint16 {
	x := math.Float32bits(f)
	if x&0x7FFFFFFF > 0x7F800000 {
		return uint16(x>>16 | 0x0040)
	}
	return uint16((x + 0x7FFF + (x>>16)&1) >> 16)
}

// BF16ToF32 widens bfloat16 bits to float32: exact, a shift.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToI32 converts f to int32 as the kernels do: toward zero, saturating at
// the int32 range, NaN giving 0.
func F32ToI32(f float32) int32 {
	switch {
	case math.IsNaN(float64(f)):
		return 0
	case float64(f) >= 1<<31:
		return math.MaxInt32
	case float64(f) <= -1<<31:
		return math.MinInt32
	}
	return int32(f)
}

// I32ToFloat returns the float32 value of i rounded once, to nearest even,
// to dt: Float32, Float16 or BFloat16. float64 holds i exactly, and the
// rounding is done on its significand, independently of the kernels'
// integer code.
func I32ToFloat(i int32, dt tensor.DType) float32 {
	bits := 24
	switch dt {
	case tensor.Float16:
		bits = 11
	case tensor.BFloat16:
		bits = 8
	}
	v := roundBits(float64(i), bits)
	if dt == tensor.Float16 && math.Abs(v) > 65504 {
		v = math.Copysign(math.Inf(1), v)
	}
	return float32(v)
}

// roundBits rounds a normal or zero x to a significand of bits bits, to
// nearest even.
func roundBits(x float64, bits int) float64 {
	m, e := math.Frexp(x) // x = m * 2^e, 0.5 <= |m| < 1
	return math.Ldexp(math.RoundToEven(math.Ldexp(m, bits)), e-bits)
}

// Bits16 returns v rounded to the 16-bit dtype dt as its bit pattern.
func Bits16(v float32, dt tensor.DType) uint16 {
	if dt == tensor.BFloat16 {
		return F32ToBF16(v)
	}
	return float16.Fromfloat32(v).Bits()
}
