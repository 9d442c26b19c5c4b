package tensor_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// Reductions and matmuls whose kernel invocations would loop past lavapipe's
// limit (65535 iterations in all, after which llvmpipe silently ends the
// loops) carry ErrLoopLimit there instead of wrong values: a column sum over
// 2^19 rows gave 65535, a row sum over 2^24 columns 131070, a matmul with
// K = 2^19 524280. Other drivers compute them.
func TestLoopLimit(t *testing.T) {
	d := devtest.Open(t)
	lavapipe := strings.Contains(d.Info().DriverName, "llvmpipe")
	const long = 1 << 19
	cases := []struct {
		name string
		run  func() *tensor.Tensor
		want float32
	}{
		{"SumAxis over rows", func() *tensor.Tensor {
			return tensor.SumAxis(tensor.Full(d, tensor.Float32, 1, long, 2), 0)
		}, long},
		{"SumAxis over a row", func() *tensor.Tensor {
			return tensor.SumAxis(tensor.Full(d, tensor.Float32, 1, 2, 1<<24), 1)
		}, 1 << 24},
		{"MatMul", func() *tensor.Tensor {
			return tensor.MatMul(tensor.Full(d, tensor.Float32, 1, 16, long), tensor.Full(d, tensor.Float32, 1, long, 8), tensor.MatMulOpts{})
		}, long},
		{"Softmax", func() *tensor.Tensor {
			return tensor.Softmax(tensor.Full(d, tensor.Float32, 0, 1, 1<<24))
		}, 1.0 / (1 << 24)},
		{"TopK", func() *tensor.Tensor {
			v, _ := tensor.TopK(tensor.Full(d, tensor.Float32, 1, 1, 1<<20), 32)
			return v
		}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := c.run().Float32s()
			if lavapipe {
				require.ErrorIs(t, err, tensor.ErrLoopLimit)
				require.Contains(t, err.Error(), "loop iterations in one kernel invocation")
				return
			}
			require.NoError(t, err)
			for i, x := range v {
				require.InEpsilon(t, c.want, x, 1e-6, "element %d", i)
			}
		})
	}
	// Just under the limit still computes, on every driver.
	v, err := tensor.SumAxis(tensor.Full(d, tensor.Float32, 1, 1<<15, 2), 0).Float32s()
	require.NoError(t, err)
	require.Equal(t, []float32{1 << 15, 1 << 15}, v)
}
