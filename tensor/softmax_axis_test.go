package tensor_test

import (
	"fmt"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
)

// TestSoftmaxAxis runs softmax, log-softmax and their backward passes along
// every axis (negative too) of odd shapes, in every input dtype, against
// the float64 reference.
func TestSoftmaxAxis(t *testing.T) {
	d := devtest.Open(t)
	f32 := tensor.Float32
	var checks []opCheck
	for _, dt := range opDTypes {
		for si, shape := range [][]int{{7}, {3, 5}, {2, 3, 5}, {4, 1, 33}, {2, 70, 3}} {
			x, xv := opRand(t, d, uint64(si), 4, dt, shape...)
			dy, dyv := opRand(t, d, uint64(si+100), 1, dt, shape...)
			for axis := range shape {
				k := shape[axis]
				tol := ref.Tol(f32, k+ref.ExpRoundings)
				soft, logSoft, logScale := ref.SoftmaxAxis(xv, shape, axis)
				what := fmt.Sprintf("%s%v axis %d", dt, shape, axis)
				ax := axis
				if axis%2 == 1 {
					ax -= len(shape)
				}
				checks = append(checks,
					opWant(t, what+" SoftmaxAxis", tensor.SoftmaxAxis(x, ax), f32, shape, soft, nil, tol),
					opWant(t, what+" LogSoftmaxAxis", tensor.LogSoftmaxAxis(x, ax), f32, shape, logSoft, logScale, tol))
				// The backward passes take y in x's dtype, as the graph may
				// hand them a cast output.
				y, yv := opInput(t, d, f32s(soft), dt, shape...)
				ly, lyv := opInput(t, d, f32s(logSoft), dt, shape...)
				dx, sc := ref.SoftmaxBackward(yv, dyv, shape, axis, false)
				ldx, lsc := ref.SoftmaxBackward(lyv, dyv, shape, axis, true)
				checks = append(checks,
					opWant(t, what+" SoftmaxBackward", tensor.SoftmaxBackward(y, dy, ax), f32, shape, dx, sc, tol),
					opWant(t, what+" LogSoftmaxBackward", tensor.LogSoftmaxBackward(ly, dy, ax), f32, shape, ldx, lsc, tol))
			}
		}
	}
	opRun(checks)
	x, _ := opRand(t, d, 1, 1, f32, 2, 3)
	dy, _ := opRand(t, d, 1, 1, f32, 3, 2)
	ints := castKeep(t, tensor.FromInt32(d, []int32{1, 2}, 2))
	opPanics[*tensor.UsageError](t, "axis", func() { tensor.SoftmaxAxis(x, 2) }, "SoftmaxAxis", "axis 2", "[2 3]")
	opPanics[*tensor.DTypeError](t, "int32", func() { tensor.LogSoftmaxAxis(ints, 0) }, "LogSoftmaxAxis", "int32")
	opPanics[*tensor.ShapeError](t, "dy shape", func() { tensor.SoftmaxBackward(x, dy, 0) }, "SoftmaxBackward", "[2 3]", "[3 2]")
	opPanics[*tensor.UsageError](t, "back axis", func() { tensor.LogSoftmaxBackward(x, x, -3) }, "LogSoftmaxBackward", "axis -3")
}

func f32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}
