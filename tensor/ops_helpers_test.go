package tensor_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Helpers of the elementwise and reduction tests. Names carry an "op" prefix
// so they cannot clash with other test files of package tensor_test.

// opDTypes are the floating dtypes, which every elementwise op and reduction
// takes in any mix.
var opDTypes = []tensor.DType{tensor.Float32, tensor.Float16, tensor.BFloat16}

// opShapes cover single elements, thin, tall and odd sizes.
var opShapes = [][]int{{1}, {1, 1}, {7}, {1, 1000}, {1000, 1}, {33, 7}, {7, 33}, {257, 3}, {2, 3, 5}, {4, 257}}

// opInput uploads vals rounded to dt and returns the tensor with the values
// it holds.
func opInput(t testing.TB, d *vk.Device, vals []float32, dt tensor.DType, shape ...int) (*tensor.Tensor, []float32) {
	t.Helper()
	held := ref.RoundAll(vals, dt)
	var x *tensor.Tensor
	switch dt {
	case tensor.Float16:
		h := make([]float16.Float16, len(vals))
		for i, v := range vals {
			h[i] = float16.Fromfloat32(v)
		}
		x = tensor.FromFloat16(d, h, shape...)
	case tensor.BFloat16:
		h := make([]uint16, len(vals))
		for i, v := range vals {
			h[i] = ref.F32ToBF16(v)
		}
		x = tensor.FromBFloat16(d, h, shape...)
	default:
		x = tensor.FromFloat32(d, held, shape...)
	}
	if err := x.Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Release)
	return x, held
}

// opRand uploads n values uniform in [-scale, scale) from seed.
func opRand(t testing.TB, d *vk.Device, seed uint64, scale float32, dt tensor.DType, shape ...int) (*tensor.Tensor, []float32) {
	t.Helper()
	n := 1
	for _, s := range shape {
		n *= s
	}
	v := ref.Rand(n, seed)
	for i := range v {
		v[i] *= scale
	}
	return opInput(t, d, v, dt, shape...)
}

// opRead waits for x and returns its values, failing t on error.
func opRead(t testing.TB, x *tensor.Tensor) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// opCheck is a check recorded now and run after the device has done all the
// work, so a test waits for the device once instead of once per case.
type opCheck func()

func opRun(checks []opCheck) {
	for _, c := range checks {
		c()
	}
}

// opWant registers a comparison of out with want within tol (scale as in
// ref.Check), also checking out's dtype and shape.
func opWant(t *testing.T, what string, out *tensor.Tensor, dt tensor.DType, shape []int, want, scale []float64, tol float64) opCheck {
	t.Cleanup(out.Release)
	return func() {
		t.Helper()
		if out.DType() != dt || fmt.Sprint(out.Shape()) != fmt.Sprint(shape) {
			t.Errorf("%s: got %s%v, want %s%v", what, out.DType(), out.Shape(), dt, shape)
			return
		}
		ref.Check(t, what, opRead(t, out), want, scale, tol)
	}
}

// opPanics runs f and checks that it panics with a value of type T whose
// message contains every one of parts.
func opPanics[T error](t *testing.T, what string, f func(), parts ...string) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		e, ok := r.(T)
		if !ok {
			var zero T
			t.Errorf("%s: panicked with %T (%v), want %T", what, r, r, zero)
			return
		}
		for _, p := range parts {
			if !strings.Contains(e.Error(), p) {
				t.Errorf("%s: message %q does not mention %q", what, e.Error(), p)
			}
		}
	}()
	f()
}

// opBits returns the bit patterns of v, to compare runs exactly.
func opBits(v []float32) []uint32 {
	b := make([]uint32, len(v))
	for i, x := range v {
		b[i] = math.Float32bits(x)
	}
	return b
}

func opShapeLen(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}

// opSpecials are the values of the NaN and inf tests: ±0, ±inf, NaN, the
// fp16 limits, an fp16 subnormal and, last, a value that overflows fp16.
var opSpecials = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0,
	float32(math.Copysign(0, -1)), 1, -1, 0.5, -2, 65504, -65504, 6e-8, 100000}

// readBits16 reads x, a 16-bit tensor, as its elements' bits.
func readBits16(t testing.TB, x *tensor.Tensor) []uint16 {
	t.Helper()
	if x.DType() == tensor.BFloat16 {
		b, err := x.BFloat16Bits()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	h, err := x.Float16s()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]uint16, len(h))
	for i, v := range h {
		b[i] = v.Bits()
	}
	return b
}

// float16s is bits as fp16 values.
func float16s(bits []uint16) []float16.Float16 {
	h := make([]float16.Float16, len(bits))
	for i, b := range bits {
		h[i] = float16.Frombits(b)
	}
	return h
}
