package tensor_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// sortRef is ArgSort's result for v [rows, cols]: each row's columns by
// value, a stable sort, NaN above every number, -0 equal to +0.
func sortRef(v []float32, cols int, descending bool) []int32 {
	return orderRef(v, cols, cols, descending)
}

func TestSort(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(9, 10))
	shapes := [][]int{{1}, {2}, {7}, {33, 7}, {2, 3, 5}, {4, 257}, {300, 10}, {3, 1000}, {2, 5000}, {1, 70000}}
	for _, dt := range opDTypes {
		for _, shape := range shapes {
			n := opShapeLen(shape)
			cols := shape[len(shape)-1]
			vals := make([]float32, n)
			for i := range vals {
				vals[i] = float32(rng.IntN(60)-30) * 0.25 // ties
			}
			if n > 20 {
				for _, i := range []int{n / 2, n / 5, n - 1} {
					vals[i] = float32(math.NaN())
				}
				vals[n/3] = float32(math.Copysign(0, -1))
				vals[n/4] = float32(math.Inf(-1))
			}
			x, held := opInput(t, d, vals, dt, shape...)
			for _, desc := range []bool{false, true} {
				what := fmt.Sprintf("Sort(%s%v, descending %v)", dt, shape, desc)
				v, idx := tensor.Sort(x, desc)
				castKeep(t, v)
				castKeep(t, idx)
				require.Equal(t, shape, v.Shape(), what)
				require.Equal(t, shape, idx.Shape(), what)
				require.Equal(t, dt, v.DType(), what)
				got, err := idx.Int32s()
				require.NoError(t, err, what)
				want := sortRef(held, cols, desc)
				require.Equal(t, want, got, what)
				wantV := make([]float32, n)
				for i, j := range want {
					wantV[i] = held[i/cols*cols+int(j)]
				}
				requireNaNOr(t, what+" values", opRead(t, v), wantV)
				got2, err := castKeep(t, tensor.ArgSort(x, desc)).Int32s()
				require.NoError(t, err)
				require.Equal(t, want, got2, "ArgSort "+what)
			}
		}
	}
}

// TestSortSpecials: rows of ±0, ±inf, NaN, fp16's limits and subnormals
// (fp32 ones too, which SwiftShader compares as zero), each row a
// rotation of the same values.
func TestSortSpecials(t *testing.T) {
	d := devtest.Open(t)
	row := orderSpecials()
	cols, all := len(row), rotations(row)
	for _, dt := range opDTypes {
		x, held := opInput(t, d, all, dt, cols, cols)
		for _, desc := range []bool{false, true} {
			got, err := castKeep(t, tensor.ArgSort(x, desc)).Int32s()
			require.NoError(t, err)
			require.Equal(t, sortRef(held, cols, desc), got, "%s descending %v", dt, desc)
		}
	}
}

func TestSortPanics(t *testing.T) {
	d := devtest.Open(t)
	xi := castKeep(t, tensor.FromInt32(d, []int32{1, 2}, 2))
	opPanics[*tensor.DTypeError](t, "Sort int32", func() { tensor.Sort(xi, false) }, "Sort", "int32")
	opPanics[*tensor.DTypeError](t, "ArgSort int32", func() { tensor.ArgSort(xi, true) }, "ArgSort", "int32")
	opPanics[*tensor.UsageError](t, "ArgSort nil", func() { tensor.ArgSort(nil, true) }, "ArgSort", "nil")
	scalar := castKeep(t, tensor.New(d, tensor.Float32))
	opPanics[*tensor.UsageError](t, "Sort scalar", func() { tensor.Sort(scalar, false) }, "Sort", "no axis")
	opPanics[*tensor.UsageError](t, "TopK scalar", func() { tensor.TopK(scalar, 1) }, "TopK", "no axis")
}
