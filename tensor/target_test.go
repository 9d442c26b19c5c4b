package tensor_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Class-index targets: the losses take Int32 labels, and a label outside
// [0, C) is a device-side assert that the next read reports.

// targetLabels uploads Int32 labels, released when the test ends.
func targetLabels(t *testing.T, d *vk.Device, labels ...int32) *tensor.Tensor {
	t.Helper()
	y := tensor.FromInt32(d, labels, len(labels))
	t.Cleanup(y.Release)
	require.NoError(t, y.Err())
	return y
}

// requireAssert checks that err is the device-side assert of op for
// target value at row, out of [0, bound).
func requireAssert(t *testing.T, err error, op string, row int, value int32, bound int) {
	t.Helper()
	require.ErrorIs(t, err, tensor.ErrBadTarget)
	var ae *tensor.AssertError
	require.True(t, errors.As(err, &ae), "%v (%T) is no *tensor.AssertError", err, err)
	require.Equal(t, tensor.AssertError{Op: op, Err: tensor.ErrBadTarget, Row: row, Value: int64(value), Bound: bound}, *ae)
}

func TestLossTargetsInt32(t *testing.T) {
	d := devtest.Open(t)
	z := func(dt tensor.DType, shape ...int) *tensor.Tensor {
		x := tensor.Zeros(d, dt, shape...)
		t.Cleanup(x.Release)
		return x
	}
	f32 := tensor.Float32
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float16, tensor.BFloat16} {
		opPanics[*tensor.DTypeError](t, "NLL "+dt.String()+" labels", func() { tensor.NLL(z(f32, 4, 3), z(dt, 4)) },
			"NLL", dt.String(), "int32 class indices")
		opPanics[*tensor.DTypeError](t, "CrossEntropyBackward "+dt.String()+" labels",
			func() { tensor.CrossEntropyBackward(z(f32, 4, 3), z(dt, 4), z(f32, 1), 1) },
			"CrossEntropyBackward", dt.String(), "int32 class indices")
	}
	// Int32 labels pass; a read reports nothing.
	nll := tensor.NLL(z(f32, 4, 3), z(tensor.Int32, 4))
	defer nll.Release()
	require.Equal(t, []float32{0, 0, 0, 0}, opRead(t, nll))
}

// TestNLLBadTarget: NLL over labels with targets -1 and C gives NaN in those
// rows, and raises the device's assert: the first read of a tensor on the
// device (here the result itself) returns it, and the read clears it.
func TestNLLBadTarget(t *testing.T) {
	d := devtest.Open(t)
	lp, vals := opRand(t, d, 6, 1, tensor.Float32, 4, 5)
	nll := tensor.NLL(lp, targetLabels(t, d, 4, 5, 0, 2))
	defer nll.Release()
	_, err := nll.Float32s()
	requireAssert(t, err, "NLL", 1, 5, 5)
	require.Contains(t, err.Error(), "tensor: NLL: device-side assert: row 1 has target 5, outside the classes [0, 5)")
	got := opRead(t, nll) // cleared
	require.Equal(t, -vals[4], got[0])
	require.True(t, math.IsNaN(float64(got[1])), "row 1: %g, want NaN", got[1])
	require.Equal(t, -vals[10], got[2])
	require.Equal(t, -vals[17], got[3])

	// A negative target, and the value of a row other than the first.
	nll2 := tensor.NLL(lp, targetLabels(t, d, 0, 1, 2, -7))
	defer nll2.Release()
	_, err = nll2.Float32s()
	requireAssert(t, err, "NLL", 3, -7, 5)
}

// TestCrossEntropyBackwardBadTarget: the gradient of a row whose target is
// out of range is NaN in every class, the other rows are as before, and the
// assert names CrossEntropyBackward, even with a zero upstream gradient.
func TestCrossEntropyBackwardBadTarget(t *testing.T) {
	d := devtest.Open(t)
	logp, _, lp, _ := nnLogProbs(t, d, 3, 4)
	for _, k := range []float32{1, 0} {
		dy, _ := opInput(t, d, []float32{k}, tensor.Float32, 1)
		out := tensor.CrossEntropyBackward(logp, targetLabels(t, d, 3, math.MinInt32, 0), dy, 1)
		defer out.Release()
		_, err := out.Float32s()
		requireAssert(t, err, "CrossEntropyBackward", 1, math.MinInt32, 4)
		got := opRead(t, out)
		for c := range 4 {
			require.Truef(t, math.IsNaN(float64(got[4+c])), "dy %g: row 1 class %d: %g, want NaN", k, c, got[4+c])
			for _, r := range []int{0, 2} {
				want := k * float32(math.Exp(float64(lp[4*r+c])))
				if (r == 0 && c == 3) || (r == 2 && c == 0) {
					want -= k
				}
				require.InDeltaf(t, want, got[4*r+c], 1e-5, "dy %g: row %d class %d", k, r, c)
			}
		}
	}
}

// TestBadTargetAnyRead: the assert is reported by the next read of any
// tensor on the device, not only of the loss, and by tensor.Wait; a device
// on which no assert was raised reads as before.
func TestBadTargetAnyRead(t *testing.T) {
	d := devtest.Open(t)
	other, _ := opInput(t, d, []float32{1, 2}, tensor.Float32, 2)
	lp, _ := opRand(t, d, 7, 1, tensor.Float32, 2, 3)
	nll := tensor.NLL(lp, targetLabels(t, d, 3, 0))
	defer nll.Release()
	_, err := other.Float32s()
	requireAssert(t, err, "NLL", 0, 3, 3)
	require.Equal(t, []float32{1, 2}, opRead(t, other))

	nll2 := tensor.NLL(lp, targetLabels(t, d, 0, -1))
	defer nll2.Release()
	requireAssert(t, tensor.Wait(d), "NLL", 1, -1, 3)
	require.NoError(t, tensor.Wait(d))
	_, err = nll2.Bytes()
	require.NoError(t, err)
}
