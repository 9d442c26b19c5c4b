package nn_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Helpers shared by nn's tests. Names carry a "t" prefix so that they do not
// clash with the example and end-to-end test files of package nn_test.

const (
	f32 = tensor.Float32
	f16 = tensor.Float16
)

// tParam returns a parameter holding vals, closed when the test ends.
func tParam(t testing.TB, d *vk.Device, name string, vals []float32, shape ...int) *nn.Param {
	t.Helper()
	p := nn.NewParam(d, name, vals, shape...)
	t.Cleanup(func() { p.Close() })
	if err := p.Value.Err(); err != nil {
		t.Fatal(err)
	}
	return p
}

// tInput uploads fp32 vals, released when the test ends.
func tInput(t testing.TB, d *vk.Device, vals []float32, shape ...int) *tensor.Tensor {
	t.Helper()
	x := tensor.FromFloat32(d, vals, shape...)
	t.Cleanup(x.Release)
	if err := x.Err(); err != nil {
		t.Fatal(err)
	}
	return x
}

// tLabels uploads Int32 class indices, released when the test ends.
func tLabels(t testing.TB, d *vk.Device, vals ...int32) *tensor.Tensor {
	t.Helper()
	y := tensor.FromInt32(d, vals, len(vals))
	t.Cleanup(y.Release)
	if err := y.Err(); err != nil {
		t.Fatal(err)
	}
	return y
}

// tRead waits for x and returns its values as float32s.
func tRead(t testing.TB, x *tensor.Tensor) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// tBits returns the bit patterns of vals, for bit-exact comparisons.
func tBits(vals []float32) []uint32 {
	b := make([]uint32, len(vals))
	for i, v := range vals {
		b[i] = math.Float32bits(v)
	}
	return b
}

// tSameBits fails t unless got and want hold the same bits.
func tSameBits(t testing.TB, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	bad := 0
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			if bad++; bad <= 4 {
				t.Errorf("%s[%d]: got %g (%#08x), want %g (%#08x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
	if bad > 4 {
		t.Errorf("%s: %d of %d values differ", what, bad, len(got))
	}
}

// tRand returns n values uniform in [-scale, scale) from seed, rounded to dt.
func tRand(n int, seed uint64, scale float32, dt tensor.DType) []float32 {
	v := ref.Rand(n, seed)
	for i := range v {
		v[i] *= scale
	}
	return ref.RoundAll(v, dt)
}

// tAway returns v with every element moved at least lo away from zero, to
// keep finite differences off the kinks of ReLU and away from zero dropout
// outputs.
func tAway(v []float32, lo float32) []float32 {
	out := slices.Clone(v)
	for i, x := range out {
		if x >= 0 {
			out[i] = x + lo
		} else {
			out[i] = x - lo
		}
	}
	return out
}

// tLen is the number of elements of shape.
func tLen(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// tPanics runs f and returns the message of its panic, failing t if it did
// not panic or panicked with something other than an error.
func tPanics(t testing.TB, what string, f func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Errorf("%s: no panic", what)
			return
		}
		err, ok := r.(error)
		if !ok {
			t.Errorf("%s: panic with %T %v, want an error value", what, r, r)
			return
		}
		msg = err.Error()
	}()
	f()
	return ""
}

// tContains fails t unless s contains every one of subs.
func tContains(t testing.TB, what, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%s: %q does not mention %q", what, s, sub)
		}
	}
}

// tMaxScale returns a scale for ref.Check that compares a vector norm-wise:
// every element against the largest magnitude of want. Gradients are sums
// whose terms cancel, so their errors follow the terms, not the result.
func tMaxScale(want []float64) []float64 {
	m := 0.0
	for _, w := range want {
		m = max(m, math.Abs(w))
	}
	s := make([]float64, len(want))
	for i := range s {
		s[i] = m
	}
	return s
}
