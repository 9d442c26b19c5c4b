package tensor_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Class-index targets: the losses take Int32 labels.

// targetLabels uploads Int32 labels, released when the test ends.
func targetLabels(t *testing.T, d *vk.Device, labels ...int32) *tensor.Tensor {
	t.Helper()
	y := tensor.FromInt32(d, labels, len(labels))
	t.Cleanup(y.Release)
	require.NoError(t, y.Err())
	return y
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
