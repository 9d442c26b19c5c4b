// Package ref is the float64 reference that vkamp's kernels are tested
// against, with one table of tolerances.
package ref

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/tensor"
)

// Unit is the unit roundoff of a dtype: 2^-24 for fp32, 2^-11 for fp16,
// 2^-8 for bf16.
func Unit(dt tensor.DType) float64 {
	switch dt {
	case tensor.Float16:
		return 0x1p-11
	case tensor.BFloat16:
		return 0x1p-8
	}
	return 0x1p-24
}

// Tol is the relative error allowed for a result rounded to out after a
// reduction of length k accumulated in fp32: one rounding of the output plus
// k roundings of the accumulator, with a factor of 2 for slack.
func Tol(out tensor.DType, k int) float64 {
	return 2 * (Unit(out) + float64(max(k, 1))*Unit(tensor.Float32))
}

// Round returns v rounded to dt, as the device stores a result computed in
// fp32: to fp32, then to the 16-bit dtype.
func Round(v float64, dt tensor.DType) float64 {
	switch dt {
	case tensor.Float16:
		return float64(float16.Fromfloat32(float32(v)).Float32())
	case tensor.BFloat16:
		return float64(BF16ToF32(F32ToBF16(float32(v))))
	}
	return float64(float32(v))
}

// RoundAll rounds every value to dt.
func RoundAll(v []float32, dt tensor.DType) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(Round(float64(x), dt))
	}
	return out
}

// Rand returns n values uniform in [-1, 1), from a fixed seed.
func Rand(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x9E3779B97F4A7C15))
	v := make([]float32, n)
	for i := range v {
		v[i] = 2*r.Float32() - 1
	}
	return v
}

// Check compares got with want element by element: each must be within
// tol*scale[i] (scale nil means |want[i]|), plus an absolute floor of
// tol*2^-14 (the smallest fp16 normal) for results near zero. NaN must match NaN and infinities must match exactly.
func Check(t testing.TB, what string, got []float32, want, scale []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		if msg := mismatch(float64(got[i]), want[i], scaleAt(scale, want, i), tol); msg != "" {
			bad++
			if bad <= 8 {
				t.Errorf("%s[%d]: got %g, want %g (%s)", what, i, got[i], want[i], msg)
			}
		}
	}
	if bad > 8 {
		t.Errorf("%s: %d of %d values out of tolerance %g", what, bad, len(got), tol)
	}
}

func scaleAt(scale, want []float64, i int) float64 {
	if scale != nil {
		return scale[i]
	}
	return math.Abs(want[i])
}

func mismatch(g, w, scale, tol float64) string {
	switch {
	case math.IsNaN(w):
		if !math.IsNaN(g) {
			return "want NaN"
		}
		return ""
	case math.IsInf(w, 0):
		if g != w {
			return "want inf"
		}
		return ""
	case math.IsNaN(g) || math.IsInf(g, 0):
		return "not finite"
	}
	if d := math.Abs(g - w); d > tol*(scale+0x1p-14) {
		return fmt.Sprintf("error %.3g > %.3g", d, tol*(scale+0x1p-14))
	}
	return ""
}
