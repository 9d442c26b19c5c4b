package tensor_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// mmMaxRangeForTest bounds the binding range the limit tests take on: over
// it (GPUs allow 4 GiB) an operand over the range is too heavy for a test.
const mmMaxRangeForTest = 1 << 30

// mmBig returns a tensor of shape and dtype dt with undefined contents, or
// skips t when the device (or tensor.New) refuses it: some devices cannot
// allocate a tensor over their binding range at all, and then no MatMul
// operand can be over it either.
func mmBig(t *testing.T, d *vk.Device, dt tensor.DType, shape ...int) *tensor.Tensor {
	t.Helper()
	x := tensor.New(d, dt, shape...)
	t.Cleanup(x.Release)
	if err := x.Err(); err != nil {
		t.Skipf("cannot make %s%v on %s: %v", dt, shape, d.Info().Name, err)
	}
	return x
}

// TestMatMulOverBindingRange checks that an operand or result over the
// device's maxStorageBufferRange gives a result carrying an error that names
// it, its size and the limit, found at the call (nothing is allocated or
// recorded), instead of a binding error from deep in vk.
func TestMatMulOverBindingRange(t *testing.T) {
	d := devtest.Open(t)
	limit := int(d.Info().MaxStorageBufferRange)
	if limit > mmMaxRangeForTest {
		t.Skipf("%s binds %d bytes: an operand over that is too large for a test", d.Info().Name, limit)
	}
	// rows of 8191 fp32 elements that take just over the limit; K = 8191
	// is no multiple of 8, so A and B go to storage bindings on every
	// kernel.
	const odd = 8191
	rows := limit/(4*odd) + 1
	cases := []struct {
		name    string
		operand string // as the error names it
		shape   []int
		dt      tensor.DType
		run     func(t *testing.T) *tensor.Tensor
	}{
		{"A", "A", []int{rows, odd}, mmF32, func(t *testing.T) *tensor.Tensor {
			a := mmBig(t, d, mmF32, rows, odd)
			return tensor.MatMul(a, mmUpload(t, d, make([]float32, odd*8), mmF32, odd, 8), tensor.MatMulOpts{})
		}},
		{"B transposed", "B", []int{rows, odd}, mmF32, func(t *testing.T) *tensor.Tensor {
			b := mmBig(t, d, mmF32, rows, odd)
			return tensor.MatMul(mmUpload(t, d, make([]float32, 8*odd), mmF16, 8, odd), b, tensor.MatMulOpts{TransB: true})
		}},
		{"C", "C", []int{rows, odd}, mmF32, func(t *testing.T) *tensor.Tensor {
			c := mmBig(t, d, mmF32, rows, odd)
			return tensor.MatMul(mmUpload(t, d, make([]float32, rows*8), mmF16, rows, 8), mmUpload(t, d, make([]float32, 8*odd), mmF16, 8, odd),
				tensor.MatMulOpts{C: c, Beta: 1, Out: mmF16})
		}},
		{"bias", "bias", []int{limit/4 + 1}, mmF32, func(t *testing.T) *tensor.Tensor {
			n := limit/4 + 1
			bias := mmBig(t, d, mmF32, n)
			b := mmBig(t, d, mmF16, 1, n) // half the range
			return tensor.MatMul(mmUpload(t, d, []float32{1}, mmF16, 1, 1), b, tensor.MatMulOpts{Bias: bias, Out: mmF16})
		}},
		{"out", "out", []int{rows, odd}, mmF32, func(t *testing.T) *tensor.Tensor {
			a, b := mmUpload(t, d, make([]float32, rows*8), mmF16, rows, 8), mmUpload(t, d, make([]float32, 8*odd), mmF16, 8, odd)
			live := d.Stats().LiveBuffers
			out := tensor.MatMul(a, b, tensor.MatMulOpts{})
			require.Equal(t, live, d.Stats().LiveBuffers, "buffers allocated for a result that cannot be bound")
			return out
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := c.run(t)
			t.Cleanup(out.Release)
			err := out.Err()
			require.Error(t, err, "MatMul with %s %s%v over maxStorageBufferRange %d", c.operand, c.dt, c.shape, limit)
			t.Log(err)
			bytes := 4 * mmNum(c.shape)
			for _, want := range []string{
				fmt.Sprintf("MatMul: %s %s%v is %d bytes", c.operand, c.dt, c.shape, bytes),
				fmt.Sprintf("maxStorageBufferRange of %d bytes", limit),
			} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			require.ErrorIs(t, err, vk.ErrInvalidArgument)
			_, rerr := out.Float32s()
			require.ErrorIs(t, rerr, vk.ErrInvalidArgument, "reading the result")
		})
	}
}

// TestMatMulLargeAUnusedBindings runs a C-less MatMul whose A is over
// maxStorageBufferRange but bound where the device allows it (lavapipe's
// texel kernel reads A through a uniform texel buffer, which can be 2 GiB):
// the unused C and bias bindings must not be bound to A, or the dispatch
// fails on a binding the caller never passed. Elsewhere, A is bound as a
// storage buffer and the call must fail naming A.
func TestMatMulLargeAUnusedBindings(t *testing.T) {
	t.Setenv("VKAMP_MATMUL", "")
	d := devtest.Open(t, vk.Options{NoTune: true})
	limit := int(d.Info().MaxStorageBufferRange)
	if limit > mmMaxRangeForTest {
		t.Skipf("%s binds %d bytes: an operand over that is too large for a test", d.Info().Name, limit)
	}
	// A batch of thin fp32 problems (16 rows: the texel kernel's thin
	// tiles waste least on clamped columns; K and N multiples of 8, as it
	// needs) just over the range, against one shared B. K stays far below
	// lavapipe's loop limit (llvmpipe ends a loop silently after 65535
	// iterations: the texel kernel's K must stay under 8*65535).
	const m, n, k = 16, 8, 8192
	batch := limit/(4*m*k) + 1
	a := mmBig(t, d, mmF32, batch, m, k)
	require.NoError(t, tensor.FillWords(a, math.Float32bits(1)))
	b := tensor.Full(d, mmF16, 0.25, k, n)
	t.Cleanup(b.Release)
	require.NoError(t, b.Err())
	kernel, err := tensor.MatMulKernel(d, a, b, tensor.MatMulOpts{})
	require.NoError(t, err)
	size := 4 * batch * m * k
	t.Logf("%s: A float32[%d %d %d] (%d bytes, range %d) runs on %s", d.Info().Name, batch, m, k, size, limit, kernel)

	out := tensor.MatMul(a, b, tensor.MatMulOpts{})
	t.Cleanup(out.Release)
	got, err := out.Float32s()
	if kernel != "matmul_tex" { // A is a storage binding: it cannot be bound
		require.Error(t, err)
		require.Contains(t, err.Error(), fmt.Sprintf("MatMul: A float32[%d %d %d] is %d bytes", batch, m, k, size))
		return
	}
	require.NoError(t, err, "MatMul with A over the storage range, bound as texels")
	want := float32(k) * 0.25 // exact in fp32
	for i, v := range got {
		if v != want {
			t.Fatalf("out[%d] = %g, want %g", i, v, want)
		}
	}
	// With a bias, C alone is unused; A still binds only as texels.
	bias := mmUpload(t, d, []float32{1, 2, 3, 4, 5, 6, 7, 8}, mmF32, n)
	out2 := tensor.MatMul(a, b, tensor.MatMulOpts{Bias: bias})
	t.Cleanup(out2.Release)
	got, err = out2.Float32s()
	require.NoError(t, err, "MatMul with a bias and A over the storage range")
	for i, v := range got {
		if w := want + float32(i%n+1); v != w {
			t.Fatalf("out with bias[%d] = %g, want %g", i, v, w)
		}
	}
}
