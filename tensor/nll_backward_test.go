package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
)

// TestNLLBackward: -alpha*dy at each row's label, 0 elsewhere; a row whose
// label is out of range is NaN in every class and raises the assert naming
// NLLBackward.
func TestNLLBackward(t *testing.T) {
	d := devtest.Open(t)
	logp, _, _, _ := nnLogProbs(t, d, 3, 4)
	dy, _ := opInput(t, d, []float32{2}, tensor.Float32, 1)
	out := tensor.NLLBackward(logp, targetLabels(t, d, 3, 1, 0), dy, 0.5)
	defer out.Release()
	require.Equal(t, []float32{0, 0, 0, -1, 0, -1, 0, 0, -1, 0, 0, 0}, opRead(t, out))

	bad := tensor.NLLBackward(logp, targetLabels(t, d, 3, 4, 0), dy, 1)
	defer bad.Release()
	_, err := bad.Float32s()
	requireAssert(t, err, "NLLBackward", 1, 4, 4)
	got := opRead(t, bad)
	for c := range 4 {
		require.Truef(t, math.IsNaN(float64(got[4+c])), "row 1 class %d: %g, want NaN", c, got[4+c])
	}
	require.Equal(t, float32(-2), got[3])
}

// TestLogSoftmaxBackward: dx = dy - exp(y) * sum(dy) per row, against
// float64, for a row longer than a workgroup too.
func TestLogSoftmaxBackward(t *testing.T) {
	d := devtest.Open(t)
	for _, shape := range [][]int{{3, 5}, {2, 700}} {
		cols := shape[1]
		x, xv := opRand(t, d, 31, 3, tensor.Float32, shape...)
		dy, dyv := opRand(t, d, 32, 1, tensor.Float32, shape...)
		y := tensor.LogSoftmax(x)
		defer y.Release()
		dx := tensor.LogSoftmaxBackward(y, dy, -1)
		defer dx.Release()
		y64 := ref.LogSoftmax64(to64s(xv), cols)
		want := make([]float64, len(y64))
		for r := 0; r < len(want); r += cols {
			var s float64
			for i := range cols {
				s += float64(dyv[r+i])
			}
			for i := range cols {
				want[r+i] = float64(dyv[r+i]) - math.Exp(y64[r+i])*s
			}
		}
		ref.Check(t, "LogSoftmaxBackward", opRead(t, dx), want, tMaxScale64(want), ref.Tol(tensor.Float32, 4*cols))
	}
	a, _ := opRand(t, d, 1, 1, tensor.Float32, 3, 5)
	b, _ := opRand(t, d, 2, 1, tensor.Float32, 5, 3)
	opPanics[*tensor.ShapeError](t, "shapes differ", func() { tensor.LogSoftmaxBackward(a, b, -1) }, "LogSoftmaxBackward")
}
