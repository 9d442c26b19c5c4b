package tensor_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
)

// scanCases are lines along one axis: short, with inner > 1 or not,
// negative axes, length-1 axes, and axes longer than one dispatch's line
// (4096), which take the chunked two-dispatch path.
var scanCases = []struct {
	shape []int
	axis  int
}{
	{[]int{1}, 0},
	{[]int{7}, 0},
	{[]int{33, 7}, 1},
	{[]int{33, 7}, 0},
	{[]int{2, 3, 5}, 1},
	{[]int{2, 3, 5}, -1},
	{[]int{4, 257}, -2},
	{[]int{4, 1, 5}, 1},
	{[]int{2, 9000}, 1},
	{[]int{5000, 3}, 0},
	{[]int{70000}, -1}, // past lavapipe's 65535 loop iterations in one line
}

// scanLines calls f with the flat positions of each line of shape along
// ax, in order.
func scanLines(shape []int, ax int, f func(pos []int)) {
	outer, k, inner := 1, shape[ax], 1
	for _, s := range shape[:ax] {
		outer *= s
	}
	for _, s := range shape[ax+1:] {
		inner *= s
	}
	pos := make([]int, k)
	for o := range outer {
		for i := range inner {
			for j := range pos {
				pos[j] = (o*k+j)*inner + i
			}
			f(pos)
		}
	}
}

// argRef is PyTorch's argmax (argmin with min) of v along ax: the first
// index of the best value, NaN best of all, -0 equal to +0.
func argRef(v []float32, shape []int, ax int, min bool) []int32 {
	var out []int32
	scanLines(shape, ax, func(pos []int) {
		bj := 0
		for j, e := range pos {
			b, x := v[pos[bj]], v[e]
			if b != b {
				break
			}
			if x != x || (!min && x > b) || (min && x < b) {
				bj = j
			}
		}
		out = append(out, int32(bj))
	})
	return out
}

// argShape is ArgMax's result shape.
func argShape(shape []int, ax int, keepdim bool) []int {
	s := slices.Clone(shape)
	if keepdim {
		s[ax] = 1
		return s
	}
	if s = slices.Delete(s, ax, ax+1); len(s) == 0 {
		s = []int{1}
	}
	return s
}

// argValues are n values with many ties (a few levels), for short lines;
// long lines get more levels so that their best value recurs in several
// chunks, and a NaN in the second chunk of every third line.
func argValues(rng *rand.Rand, n, k int) []float32 {
	levels := 9
	if k > 4096 {
		levels = 2000
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.IntN(levels)-levels/2) * 0.5
	}
	return v
}

func TestArgMaxArgMin(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dt := range opDTypes {
		for _, c := range scanCases {
			n := opShapeLen(c.shape)
			ax := (c.axis + len(c.shape)) % len(c.shape)
			vals := argValues(rng, n, c.shape[ax])
			if c.shape[ax] > 4096 {
				scanLines(c.shape, ax, func(pos []int) {
					if pos[0]%3 == 0 {
						vals[pos[1500]] = float32(math.NaN())
					}
				})
			}
			x, held := opInput(t, d, vals, dt, c.shape...)
			for _, min := range []bool{false, true} {
				for _, keepdim := range []bool{false, true} {
					op, f := "ArgMax", tensor.ArgMax
					if min {
						op, f = "ArgMin", tensor.ArgMin
					}
					what := fmt.Sprintf("%s(%s%v, %d, %v)", op, dt, c.shape, c.axis, keepdim)
					y := castKeep(t, f(x, c.axis, keepdim))
					require.Equal(t, tensor.Int32, y.DType(), what)
					require.Equal(t, argShape(c.shape, ax, keepdim), y.Shape(), what)
					got, err := y.Int32s()
					require.NoError(t, err, what)
					require.Equal(t, argRef(held, c.shape, ax, min), got, what)
				}
			}
		}
	}
}

// TestArgMaxSpecials: rows of ±0, ±inf, NaN, fp16's limits and subnormals
// (fp32 subnormals too, which SwiftShader compares as zero: the kernel
// compares bits), each row a rotation of the same values, so that each
// special comes first somewhere.
func TestArgMaxSpecials(t *testing.T) {
	d := devtest.Open(t)
	vals := orderSpecials()
	vals = vals[:len(vals)-1] // the NaN comes from opSpecials here
	for _, dt := range opDTypes {
		for _, nan := range []bool{true, false} {
			row := slices.Clone(vals)
			if !nan {
				row = row[1:] // vals[0] is the NaN
			}
			k, all := len(row), rotations(row)
			x, held := opInput(t, d, all, dt, k, k)
			for _, min := range []bool{false, true} {
				for _, axis := range []int{0, 1} {
					f := tensor.ArgMax
					if min {
						f = tensor.ArgMin
					}
					what := fmt.Sprintf("%s nan %v min %v axis %d", dt, nan, min, axis)
					got, err := castKeep(t, f(x, axis, false)).Int32s()
					require.NoError(t, err, what)
					require.Equal(t, argRef(held, []int{k, k}, axis, min), got, what)
				}
			}
		}
	}
}

// cumRef is the float64 prefix sums of v along ax (suffix sums if
// reverse), and their error scale: the same sums of |v|.
func cumRef(v []float32, shape []int, ax int, reverse bool) (want, scale []float64) {
	want, scale = make([]float64, len(v)), make([]float64, len(v))
	scanLines(shape, ax, func(pos []int) {
		if reverse {
			slices.Reverse(pos)
		}
		s, a := 0.0, 0.0
		for _, e := range pos {
			s += float64(v[e])
			a += math.Abs(float64(v[e]))
			want[e], scale[e] = s, a
		}
	})
	return want, scale
}

func TestCumSum(t *testing.T) {
	d := devtest.Open(t)
	var checks []opCheck
	for _, in := range opDTypes {
		for _, out := range opDTypes {
			for i, c := range scanCases {
				x, held := opRand(t, d, uint64(10+i), 2, in, c.shape...)
				ax := (c.axis + len(c.shape)) % len(c.shape)
				for _, reverse := range []bool{false, true} {
					want, scale := cumRef(held, c.shape, ax, reverse)
					for j := range want {
						want[j] = ref.Round(want[j], out)
					}
					op, f := "CumSum", tensor.CumSum
					if reverse {
						op, f = "CumSumReverse", tensor.CumSumReverse
					}
					what := fmt.Sprintf("%s(%s%v, %d, %s)", op, in, c.shape, c.axis, out)
					checks = append(checks, opWant(t, what, f(x, c.axis, out), out, c.shape, want, scale, ref.Tol(out, c.shape[ax])))
				}
			}
		}
	}
	opRun(checks)
}

// TestCumSumSpecials: infinities and NaN propagate as the adds make them,
// a line of -0 sums to -0, and fp32 sums past fp16's range overflow to
// inf when stored as fp16.
func TestCumSumSpecials(t *testing.T) {
	d := devtest.Open(t)
	inf := float32(math.Inf(1))
	nz := float32(math.Copysign(0, -1))
	rows := [][]float32{
		{1, inf, -inf, 2},
		{float32(math.NaN()), 1, 2, 3},
		{nz, nz, nz, 0},
		{60000, 60000, -60000, 1},
	}
	var all []float32
	for _, r := range rows {
		all = append(all, r...)
	}
	for _, dt := range opDTypes {
		x, held := opInput(t, d, all, dt, len(rows), 4)
		for _, out := range opDTypes {
			what := fmt.Sprintf("CumSum specials %s -> %s", dt, out)
			want, _ := cumRef(held, []int{len(rows), 4}, 1, false)
			for j := range want {
				want[j] = ref.Round(want[j], out)
			}
			got := opRead(t, castKeep(t, tensor.CumSum(x, -1, out)))
			ref.Check(t, what, got, want, nil, ref.Tol(out, 4))
			for j := 8; j < 11; j++ { // -0 stays -0
				require.Equal(t, math.Float32bits(nz), math.Float32bits(got[j]), "%s[%d]", what, j)
			}
		}
	}
}

func TestScanPanics(t *testing.T) {
	d := devtest.Open(t)
	x, _ := opRand(t, d, 1, 1, tensor.Float32, 2, 3)
	xi := castKeep(t, tensor.FromInt32(d, []int32{1, 2}, 2))
	opPanics[*tensor.UsageError](t, "ArgMax axis 2", func() { tensor.ArgMax(x, 2, false) }, "ArgMax", "axis 2")
	opPanics[*tensor.UsageError](t, "ArgMin axis -3", func() { tensor.ArgMin(x, -3, true) }, "ArgMin", "axis -3")
	opPanics[*tensor.UsageError](t, "CumSum axis 2", func() { tensor.CumSum(x, 2, tensor.Float32) }, "CumSum", "axis 2")
	opPanics[*tensor.DTypeError](t, "ArgMax int32", func() { tensor.ArgMax(xi, 0, false) }, "ArgMax", "int32")
	opPanics[*tensor.DTypeError](t, "ArgMin int32", func() { tensor.ArgMin(xi, 0, false) }, "ArgMin", "int32")
	opPanics[*tensor.DTypeError](t, "CumSum int32", func() { tensor.CumSum(xi, 0, tensor.Float32) }, "CumSum", "int32")
	opPanics[*tensor.DTypeError](t, "CumSum int32 out", func() { tensor.CumSum(x, 0, tensor.Int32) }, "CumSum", "int32")
	opPanics[*tensor.UsageError](t, "CumSumReverse axis -3", func() { tensor.CumSumReverse(x, -3, tensor.Float32) }, "CumSumReverse", "axis -3")
	opPanics[*tensor.UsageError](t, "ArgMax nil", func() { tensor.ArgMax(nil, 0, false) }, "ArgMax", "nil")
}

// TestScanLongLines: lines far past lavapipe's 65535 loop iterations
// compute on every driver, cut into chunks: CumSum of 2^21 ones (exact in
// fp32), forward and reverse, and ArgMax and ArgMin of an Arange.
func TestScanLongLines(t *testing.T) {
	d := devtest.Open(t)
	const n = 1 << 21
	ones := castKeep(t, tensor.Full(d, tensor.Float32, 1, 1, n))
	for r, f := range []func(*tensor.Tensor, int, tensor.DType) *tensor.Tensor{tensor.CumSum, tensor.CumSumReverse} {
		v := opRead(t, castKeep(t, f(ones, -1, tensor.Float32)))
		for i, x := range v {
			want := float32(i + 1)
			if r == 1 {
				want = float32(n - i)
			}
			if x != want {
				t.Fatalf("element %d: %g, want %g", i, x, want)
			}
		}
	}
	ramp := castKeep(t, tensor.Arange(d, tensor.Float32, 0, n, 1))
	got, err := castKeep(t, tensor.ArgMax(ramp, 0, false)).Int32s()
	require.NoError(t, err)
	require.Equal(t, []int32{n - 1}, got)
	got, err = castKeep(t, tensor.ArgMin(ramp, 0, true)).Int32s()
	require.NoError(t, err)
	require.Equal(t, []int32{0}, got)
}
