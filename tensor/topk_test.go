package tensor_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// topkRef is TopK's indices of v [rows, cols]: each row's columns ordered
// by value, largest first, NaN above every number, equal values (-0 and +0
// among them) in column order; the first k.
func topkRef(v []float32, cols, k int) []int32 { return orderRef(v, cols, k, true) }

// orderRef is the first k columns of each row of v [rows, cols] in order
// of value, ascending or descending, NaN above every number, equal values
// (-0 and +0 among them) in column order.
func orderRef(v []float32, cols, k int, descending bool) []int32 {
	var out []int32
	for r := 0; r < len(v)/cols; r++ {
		row := v[r*cols : (r+1)*cols]
		js := make([]int32, cols)
		for j := range js {
			js[j] = int32(j)
		}
		slices.SortStableFunc(js, func(a, b int32) int {
			x, y := row[a], row[b]
			xn, yn := x != x, y != y
			c := 1
			switch {
			case xn && yn, !xn && !yn && x == y:
				return 0
			case yn || (!xn && x < y):
				c = -1
			}
			if descending {
				c = -c
			}
			return c
		})
		out = append(out, js[:k]...)
	}
	return out
}

// orderSpecials are the values the ordering ops' specials tests rank:
// opSpecials (its first a NaN), fp32 subnormals (which SwiftShader
// compares as zero), -0, and a second NaN last.
func orderSpecials() []float32 {
	return append(slices.Clone(opSpecials), 1e-40, 2e-40, -1e-40, float32(math.Copysign(0, -1)), float32(math.NaN()))
}

// rotations is row rotated by each of its positions, one rotation a row:
// a [len(row), len(row)] input in which each value comes first somewhere.
func rotations(row []float32) []float32 {
	var all []float32
	for r := range row {
		all = append(all, row[r:]...)
		all = append(all, row[:r]...)
	}
	return all
}

func TestTopK(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(7, 8))
	cases := []struct {
		shape []int
		k     int
	}{
		{[]int{1}, 1},
		{[]int{7}, 3},
		{[]int{7}, 7},
		{[]int{33, 7}, 2},
		{[]int{2, 3, 5}, 5},
		{[]int{4, 257}, 10},
		{[]int{300, 10}, 3},
		{[]int{2, 5000}, 5},
		{[]int{3, 20000}, 20},
	}
	for _, dt := range opDTypes {
		for _, c := range cases {
			n := opShapeLen(c.shape)
			cols := c.shape[len(c.shape)-1]
			vals := make([]float32, n)
			for i := range vals {
				vals[i] = float32(rng.IntN(40)-20) * 0.25 // ties
			}
			if n > 20 {
				vals[n/2] = float32(math.NaN())
				vals[n/3] = float32(math.Copysign(0, -1))
			}
			x, held := opInput(t, d, vals, dt, c.shape...)
			what := fmt.Sprintf("TopK(%s%v, %d)", dt, c.shape, c.k)
			v, idx := tensor.TopK(x, c.k)
			castKeep(t, v)
			castKeep(t, idx)
			want := slices.Clone(c.shape)
			want[len(want)-1] = c.k
			require.Equal(t, want, v.Shape(), what)
			require.Equal(t, want, idx.Shape(), what)
			require.Equal(t, dt, v.DType(), what)
			require.Equal(t, tensor.Int32, idx.DType(), what)
			got, err := idx.Int32s()
			require.NoError(t, err, what)
			wantIdx := topkRef(held, cols, c.k)
			require.Equal(t, wantIdx, got, what)
			wantV := make([]float32, len(wantIdx))
			for i, j := range wantIdx {
				wantV[i] = held[i/c.k*cols+int(j)]
			}
			requireNaNOr(t, what+" values", opRead(t, v), wantV)
		}
	}
}

// TestTopKSpecials: rows of ±0, ±inf, NaN, fp16's limits and subnormals
// (fp32 ones too, which SwiftShader compares as zero), each row a
// rotation of the same values, every k.
func TestTopKSpecials(t *testing.T) {
	d := devtest.Open(t)
	row := orderSpecials()
	cols, all := len(row), rotations(row)
	for _, dt := range opDTypes {
		x, held := opInput(t, d, all, dt, cols, cols)
		for k := 1; k <= cols; k++ {
			_, idx := tensor.TopK(x, k)
			got, err := castKeep(t, idx).Int32s()
			require.NoError(t, err)
			require.Equal(t, topkRef(held, cols, k), got, "%s k %d", dt, k)
		}
	}
}

func TestTopKPanics(t *testing.T) {
	d := devtest.Open(t)
	x, _ := opRand(t, d, 1, 1, tensor.Float32, 2, 3)
	xi := castKeep(t, tensor.FromInt32(d, []int32{1, 2}, 2))
	opPanics[*tensor.UsageError](t, "k 0", func() { tensor.TopK(x, 0) }, "TopK", "k 0", "[1, 3]")
	opPanics[*tensor.UsageError](t, "k 4", func() { tensor.TopK(x, 4) }, "TopK", "k 4")
	opPanics[*tensor.DTypeError](t, "int32", func() { tensor.TopK(xi, 1) }, "TopK", "int32")
	opPanics[*tensor.UsageError](t, "nil", func() { tensor.TopK(nil, 1) }, "TopK", "nil")
}
