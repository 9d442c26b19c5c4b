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

// ixRef is IndexSelect in Go over x's held values: rows of cols elements,
// NaN rows for indices outside [0, rows).
func ixRef(x []float32, rows, cols int, idx []int32) []float32 {
	out := make([]float32, 0, len(idx)*cols)
	for _, j := range idx {
		for c := range cols {
			if j < 0 || int(j) >= rows {
				out = append(out, float32(math.NaN()))
			} else {
				out = append(out, x[int(j)*cols+c])
			}
		}
	}
	return out
}

// TestIndexSelect picks rows of every floating dtype and several shapes
// (odd row lengths, so 16-bit rows straddle words; rows of whole 16-byte
// texels, which CPU drivers read as texels), with repeated indices, bit for
// bit against the Go reference (out-of-range indices: TestBadIndexRows).
func TestIndexSelect(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(7, 8))
	shapes := [][]int{{5}, {5, 3}, {4, 2, 3}, {7, 1}, {1, 9}, {300, 257}, {5, 4}, {9, 8}, {6, 4, 4}, {40, 24}}
	for _, dt := range opDTypes {
		for si, shape := range shapes {
			rows, cols := shape[0], opShapeLen(shape)/shape[0]
			x, xv := opRand(t, d, uint64(si), 100, dt, shape...)
			idx := []int32{0, int32(rows - 1), 0}
			for range 2*rows + 1 {
				idx = append(idx, int32(rng.IntN(rows)))
			}
			for _, m := range []int{1, 2, 3, len(idx)} {
				what := fmt.Sprintf("IndexSelect(%s%v, %v)", dt, shape, idx[:min(m, 8)])
				ix := castKeep(t, tensor.FromInt32(d, idx[:m], m))
				y := castKeep(t, tensor.IndexSelect(x, ix))
				require.Equal(t, dt, y.DType(), what)
				require.Equal(t, append([]int{m}, shape[1:]...), y.Shape(), what)
				require.Equal(t, opBits(ixRef(xv, rows, cols, idx[:m])), opBits(opRead(t, y)), what)
			}
		}
	}
	x, _ := opRand(t, d, 1, 1, tensor.Float16, 4, 2)
	ix := castKeep(t, tensor.FromInt32(d, []int32{1, 2}, 2))
	ints := castKeep(t, tensor.FromInt32(d, []int32{1, 2, 3, 4}, 4, 1))
	fidx, _ := opRand(t, d, 2, 1, tensor.Float32, 2)
	opPanics[*tensor.DTypeError](t, "float indices", func() { tensor.IndexSelect(x, fidx) }, "IndexSelect", "float32")
	opPanics[*tensor.DTypeError](t, "int32 x", func() { tensor.IndexSelect(ints, ix) }, "IndexSelect", "int32")
	opPanics[*tensor.ShapeError](t, "2-D indices", func() { tensor.IndexSelect(x, ints) }, "IndexSelect", "[4 2]", "[4 1]")
	scalar := castKeep(t, tensor.Zeros(d, tensor.Float32))
	opPanics[*tensor.ShapeError](t, "scalar x", func() { tensor.IndexSelect(scalar, ix) }, "IndexSelect", "[]", "[2]")
}
