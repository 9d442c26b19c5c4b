package tensor_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// arangeRef is Arange's elements: start + i*step in fp32, each operation
// rounded once, then rounded to dt; and the float64 values rounded to dt.
func arangeRef(start, end, step float64, dt tensor.DType) (got, exact []float64) {
	n := int(math.Ceil((end - start) / step))
	s, st := float32(start), float32(step)
	for i := range n {
		m := float32(float32(i) * st) // the conversion rounds: no fused multiply-add
		got = append(got, ref.Round(float64(m+s), dt))
		exact = append(exact, ref.Round(start+float64(i)*step, dt)) // inf past dt's range
	}
	return got, exact
}

func TestArange(t *testing.T) {
	d := devtest.Open(t)
	cases := []struct{ start, end, step float64 }{
		{0, 10, 1},
		{-5, 17, 3},
		{10, -7, -4},
		{0, 5001, 1},
		{7, 8, 2},
		{math.MinInt32, math.MinInt32 + 5, 2},
		{math.MaxInt32 - 5, math.MaxInt32, 1},
	}
	for _, c := range cases {
		what := fmt.Sprintf("Arange(int32, %v, %v, %v)", c.start, c.end, c.step)
		y := castKeep(t, tensor.Arange(d, tensor.Int32, c.start, c.end, c.step))
		var want []int32
		for v := c.start; (c.step > 0 && v < c.end) || (c.step < 0 && v > c.end); v += c.step {
			want = append(want, int32(v))
		}
		require.Equal(t, []int{len(want)}, y.Shape(), what)
		got, err := y.Int32s()
		require.NoError(t, err, what)
		require.Equal(t, want, got, what)
	}
	fcases := []struct{ start, end, step float64 }{
		{0, 1, 0.1},
		{-3.5, 1000.25, 0.75},
		{1, 0, -0.01},
		{0, 3001, 1},
		{1 << 20, 1<<20 + 100, 0.3},
		{0.1, 0.2, 1},
		{-1e30, 1e30, 3e29},
	}
	for _, dt := range opDTypes {
		for _, c := range fcases {
			what := fmt.Sprintf("Arange(%s, %v, %v, %v)", dt, c.start, c.end, c.step)
			y := castKeep(t, tensor.Arange(d, dt, c.start, c.end, c.step))
			want, exact := arangeRef(c.start, c.end, c.step, dt)
			require.Equal(t, dt, y.DType(), what)
			require.Equal(t, []int{len(want)}, y.Shape(), what)
			got := opRead(t, y)
			require.Equal(t, opBits(f32s(want)), opBits(got), what)
			// and within two fp32 roundings and one of dt of the exact values
			scale := make([]float64, len(exact))
			for i := range exact {
				scale[i] = math.Abs(c.start) + math.Abs(float64(i)*c.step)
			}
			ref.Check(t, what+" vs float64", got, exact, scale, ref.Tol(dt, 2))
		}
	}
}

func TestArangePanics(t *testing.T) {
	d := devtest.Open(t)
	f32, i32 := tensor.Float32, tensor.Int32
	opPanics[*tensor.UsageError](t, "step 0", func() { tensor.Arange(d, f32, 0, 1, 0) }, "Arange", "step must be nonzero")
	opPanics[*tensor.UsageError](t, "wrong sign", func() { tensor.Arange(d, f32, 0, 1, -1) }, "Arange", "does not lead")
	opPanics[*tensor.UsageError](t, "wrong sign down", func() { tensor.Arange(d, i32, 5, 1, 1) }, "Arange", "does not lead")
	opPanics[*tensor.UsageError](t, "empty", func() { tensor.Arange(d, f32, 3, 3, 1) }, "Arange", "empty")
	opPanics[*tensor.UsageError](t, "NaN", func() { tensor.Arange(d, f32, 0, math.NaN(), 1) }, "Arange", "finite")
	opPanics[*tensor.UsageError](t, "inf", func() { tensor.Arange(d, f32, 0, math.Inf(1), 1) }, "Arange", "finite")
	opPanics[*tensor.UsageError](t, "fp32 overflow", func() { tensor.Arange(d, f32, 0, 1e300, 1e299) }, "Arange", "float32")
	opPanics[*tensor.UsageError](t, "too long", func() { tensor.Arange(d, f32, 0, 1<<31, 1) }, "Arange", "2^31")
	opPanics[*tensor.UsageError](t, "int32 fraction", func() { tensor.Arange(d, i32, 0, 5, 0.5) }, "Arange", "int32 integers")
	opPanics[*tensor.UsageError](t, "int32 range", func() { tensor.Arange(d, i32, 0, 1<<32, 1<<31) }, "Arange", "int32 integers")
	opPanics[*tensor.UsageError](t, "nil device", func() { tensor.Arange(nil, f32, 0, 5, 1) }, "Arange", "nil device")
	opPanics[*tensor.DTypeError](t, "bad dtype", func() { tensor.Arange(d, tensor.DType(17), 0, 5, 1) }, "Arange")
}

// oneHotRef is OneHot's result for good indices, as floats.
func oneHotRef(idx []int32, classes int) []float32 {
	out := make([]float32, len(idx)*classes)
	for r, j := range idx {
		out[r*classes+int(j)] = 1
	}
	return out
}

func TestOneHot(t *testing.T) {
	d := devtest.Open(t)
	for _, c := range []struct {
		idx     []int32
		shape   []int
		classes int
	}{
		{[]int32{0}, []int{1}, 1},
		{[]int32{2, 0, 3, 3, 1}, []int{5}, 4},
		{[]int32{6, 0, 5, 1, 2, 3}, []int{2, 3}, 7},
		{[]int32{1, 0, 2}, []int{3}, 3},
	} {
		idx := castKeep(t, tensor.FromInt32(d, c.idx, c.shape...))
		want := oneHotRef(c.idx, c.classes)
		for _, dt := range []tensor.DType{tensor.Int32, tensor.Float32, tensor.Float16, tensor.BFloat16} {
			what := fmt.Sprintf("OneHot(%v, %d, %s)", c.idx, c.classes, dt)
			y := castKeep(t, tensor.OneHot(idx, c.classes, dt))
			require.Equal(t, dt, y.DType(), what)
			require.Equal(t, append(slices.Clone(c.shape), c.classes), y.Shape(), what)
			if dt == tensor.Int32 {
				got, err := y.Int32s()
				require.NoError(t, err, what)
				wi := make([]int32, len(want))
				for i, v := range want {
					wi[i] = int32(v)
				}
				require.Equal(t, wi, got, what)
				continue
			}
			require.Equal(t, opBits(want), opBits(opRead(t, y)), what)
		}
	}
}

// TestOneHotBadIndex: an index outside [0, classes) raises the device's
// assert, read as an *AssertError naming OneHot, the index's flat position
// and value; the read after gives the bad row as NaN (-1 for Int32) and
// the others right; good indices then read normally.
func TestOneHotBadIndex(t *testing.T) {
	bothModes(t, func(t *testing.T, d *vk.Device) {
		const classes = 5
		good := []int32{3, 0, 4, 1, 2, 2}
		for _, dt := range []tensor.DType{tensor.Int32, tensor.Float32, tensor.Float16, tensor.BFloat16} {
			for _, bad := range badValues(classes) {
				what := fmt.Sprintf("OneHot(%s, index %d)", dt, bad)
				idx := slices.Clone(good)
				idx[4] = bad
				y := castKeep(t, tensor.OneHot(castKeep(t, tensor.FromInt32(d, idx, 2, 3)), classes, dt))
				_, err := y.Bytes()
				requireBadIndex(t, err, "OneHot", 4, bad, classes)
				idx[4] = 0
				want := oneHotRef(idx, classes)
				for c := range classes {
					want[4*classes+c] = float32(math.NaN())
				}
				if dt == tensor.Int32 {
					got, err := y.Int32s()
					require.NoError(t, err, what)
					for i, v := range want {
						w := int32(v)
						if v != v {
							w = -1
						}
						require.Equal(t, w, got[i], "%s[%d]", what, i)
					}
					continue
				}
				requireNaNOr(t, what, opRead(t, y), want)
			}
			y := castKeep(t, tensor.OneHot(castKeep(t, tensor.FromInt32(d, good, 6)), classes, dt))
			_, err := y.Bytes()
			require.NoError(t, err, "good indices after")
		}
	})
}

func TestOneHotPanics(t *testing.T) {
	d := devtest.Open(t)
	idx := castKeep(t, tensor.FromInt32(d, []int32{1, 2}, 2))
	x, _ := opRand(t, d, 1, 1, tensor.Float32, 2)
	opPanics[*tensor.UsageError](t, "classes 0", func() { tensor.OneHot(idx, 0, tensor.Int32) }, "OneHot", "classes 0")
	opPanics[*tensor.UsageError](t, "classes -1", func() { tensor.OneHot(idx, -1, tensor.Float32) }, "OneHot", "classes -1")
	opPanics[*tensor.DTypeError](t, "float idx", func() { tensor.OneHot(x, 3, tensor.Int32) }, "OneHot", "int32 indices")
	opPanics[*tensor.DTypeError](t, "bad out", func() { tensor.OneHot(idx, 3, tensor.DType(17)) }, "OneHot")
	opPanics[*tensor.UsageError](t, "nil idx", func() { tensor.OneHot(nil, 3, tensor.Int32) }, "OneHot", "nil")
}
