package tensor_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// attnCase is one attention problem; rank3 gives qkv as [batch, T, 3C].
type attnCase struct {
	batch, t, heads, hd int
	rank3               bool
}

// attnCases cover one row, odd lengths that end mid-block and mid-workgroup,
// several heads and batches, and head sizes 8, 32 and 64.
var attnCases = []attnCase{
	{1, 1, 1, 8, false}, {2, 7, 2, 8, true}, {1, 65, 1, 32, false}, {2, 17, 3, 64, false}, {1, 33, 2, 32, true},
}

// TestCausalAttention runs the forward and backward passes in every floating
// dtype against the float64 reference, and the backward twice for the
// same bits.
func TestCausalAttention(t *testing.T) {
	d := devtest.Open(t)
	kinds := []string{""} // the device's choice
	if strings.Contains(d.Info().DriverName, "llvmpipe") {
		kinds = append(kinds, "shared") // lavapipe's choice is the texel kernels
	}
	for _, k := range kinds {
		t.Run("kernels="+k, func(t *testing.T) {
			defer tensor.SetAttentionKernel(tensor.SetAttentionKernel(k))
			for _, dt := range opDTypes {
				for ci, c := range attnCases {
					checkAttention(t, d, dt, ci, c)
				}
			}
			// An odd head size in fp32, a head of 128.
			checkAttention(t, d, tensor.Float32, 9, attnCase{2, 9, 2, 5, false})
			checkAttention(t, d, tensor.Float32, 10, attnCase{1, 3, 1, 128, false})
		})
	}
}

func checkAttention(t *testing.T, dev *vk.Device, dt tensor.DType, ci int, c attnCase) {
	t.Helper()
	C := c.heads * c.hd
	shape := []int{c.batch * c.t, 3 * C}
	yshape := []int{c.batch * c.t, C}
	if c.rank3 {
		shape = []int{c.batch, c.t, 3 * C}
		yshape = []int{c.batch, c.t, C}
	}
	what := fmt.Sprintf("attention %s batch %d T %d heads %d hd %d", dt, c.batch, c.t, c.heads, c.hd)
	qkv, qv := opRand(t, dev, uint64(40+ci), 1.5, dt, shape...)
	dy, dyv := opRand(t, dev, uint64(60+ci), 1, dt, yshape...)
	scale := 1 / math.Sqrt(float64(c.hd))
	r := ref.Attention{Batch: c.batch, T: c.t, Heads: c.heads, C: C, Scale: float64(float32(scale))}
	wantY, wantL := r.Forward(attn64(qv))
	wantD := r.Backward(attn64(qv), attn64(dyv))

	y, lse := tensor.CausalAttention(qkv, c.batch, c.heads, float32(scale))
	castKeep(t, y)
	castKeep(t, lse)
	require.Equal(t, yshape, y.Shape(), what)
	require.Equal(t, dt, y.DType(), what)
	require.Equal(t, []int{c.batch, c.heads, c.t}, lse.Shape(), what)
	require.Equal(t, tensor.Float32, lse.DType(), what)
	k := 4*(c.hd+c.t) + ref.ExpRoundings
	ones := func(n int, v float64) []float64 {
		s := make([]float64, n)
		for i := range s {
			s[i] = v
		}
		return s
	}
	ref.Check(t, what+" y", opRead(t, y), wantY, ones(len(wantY), 1.5), ref.Tol(dt, k))
	lscale := make([]float64, len(wantL))
	for i, l := range wantL {
		lscale[i] = 1 + math.Abs(l)
	}
	ref.Check(t, what+" lse", opRead(t, lse), wantL, lscale, ref.Tol(tensor.Float32, k))

	dqkv := castKeep(t, tensor.CausalAttentionBackward(qkv, y, lse, dy, c.batch, c.heads, float32(scale)))
	require.Equal(t, shape, dqkv.Shape(), what)
	require.Equal(t, dt, dqkv.DType(), what)
	got := opRead(t, dqkv)
	m := 0.0
	for _, v := range wantD {
		m = max(m, math.Abs(v))
	}
	tol := ref.Tol(dt, k)
	if dt != tensor.Float32 {
		tol *= 4 // D = dy . y reads y rounded to dt, as PyTorch's backward does
	}
	ref.Check(t, what+" dqkv", got, wantD, ones(len(wantD), m), tol)
	again := castKeep(t, tensor.CausalAttentionBackward(qkv, y, lse, dy, c.batch, c.heads, float32(scale)))
	require.Equal(t, opBits(got), opBits(opRead(t, again)), what+": backward not deterministic")
}

func TestCausalAttentionPanics(t *testing.T) {
	d := devtest.Open(t)
	z := func(dt tensor.DType, shape ...int) *tensor.Tensor {
		x := tensor.Zeros(d, dt, shape...)
		t.Cleanup(x.Release)
		return x
	}
	f32, f16, i32 := tensor.Float32, tensor.Float16, tensor.Int32
	const op = "CausalAttention"
	opPanics[*tensor.ShapeError](t, "columns", func() { tensor.CausalAttention(z(f32, 4, 18), 1, 4, 1) }, op, "[4 18]")
	opPanics[*tensor.ShapeError](t, "rows", func() { tensor.CausalAttention(z(f32, 5, 12), 2, 1, 1) }, op, "[5 12]")
	opPanics[*tensor.ShapeError](t, "batch of rank 3", func() { tensor.CausalAttention(z(f32, 2, 3, 12), 3, 1, 1) }, op, "[2 3 12]")
	opPanics[*tensor.ShapeError](t, "1-D", func() { tensor.CausalAttention(z(f32, 12), 1, 1, 1) }, op, "[12]")
	opPanics[*tensor.DTypeError](t, "int32", func() { tensor.CausalAttention(z(i32, 2, 12), 1, 1, 1) }, op, "int32")
	opPanics[*tensor.UsageError](t, "odd fp16 head", func() { tensor.CausalAttention(z(f16, 2, 15), 1, 1, 1) }, op, "odd")
	opPanics[*tensor.UsageError](t, "head above 128", func() { tensor.CausalAttention(z(f32, 2, 3*130), 1, 1, 1) }, op, "130", "128")
	opPanics[*tensor.UsageError](t, "no heads", func() { tensor.CausalAttention(z(f32, 2, 12), 1, 0, 1) }, op, "heads")
	const bop = "CausalAttentionBackward"
	qkv, y, lse := z(f32, 6, 12), z(f32, 6, 4), z(f32, 2, 1, 3)
	opPanics[*tensor.ShapeError](t, "dy shape", func() { tensor.CausalAttentionBackward(qkv, y, lse, z(f32, 6, 3), 2, 1, 1) }, bop, "[6 3]")
	opPanics[*tensor.DTypeError](t, "dy dtype", func() { tensor.CausalAttentionBackward(qkv, y, lse, z(f16, 6, 4), 2, 1, 1) }, bop, "float16")
	opPanics[*tensor.ShapeError](t, "lse shape", func() { tensor.CausalAttentionBackward(qkv, y, z(f32, 2, 3), y, 2, 1, 1) }, bop, "[2 3]")
	opPanics[*tensor.DTypeError](t, "lse dtype", func() { tensor.CausalAttentionBackward(qkv, y, z(f16, 2, 1, 3), y, 2, 1, 1) }, bop, "float16")
}

// TestCausalAttentionLoopLimit: on lavapipe, a sequence past the kernels'
// loop budget is an error wrapping ErrLoopLimit, not wrong numbers.
func TestCausalAttentionLoopLimit(t *testing.T) {
	d := devtest.Open(t)
	if !strings.Contains(d.Info().DriverName, "llvmpipe") {
		t.Skip("the loop limit is lavapipe's")
	}
	qkv := castKeep(t, tensor.New(d, tensor.Float16, 32768, 3*128))
	y, lse := tensor.CausalAttention(qkv, 1, 1, 1)
	defer y.Release()
	defer lse.Release()
	for _, o := range []*tensor.Tensor{y, lse} {
		if err := o.Err(); !errors.Is(err, tensor.ErrLoopLimit) || !strings.Contains(err.Error(), "CausalAttention") {
			t.Errorf("error %v, want one naming CausalAttention that wraps ErrLoopLimit", err)
		}
	}
}

func attn64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestCausalMask: 1 exactly where the column is above the row, for lengths
// from 1 past a workgroup's reach; out-of-range lengths panic.
func TestCausalMask(t *testing.T) {
	d := devtest.Open(t)
	for _, n := range []int{1, 2, 7, 64, 300} {
		m := tensor.CausalMask(d, n)
		got, err := m.Int32s()
		require.NoError(t, err)
		require.Equal(t, []int{n, n}, m.Shape())
		for i := range n {
			for j := range n {
				if want := int32(map[bool]int{false: 0, true: 1}[j > i]); got[i*n+j] != want {
					t.Fatalf("CausalMask(%d)[%d, %d] = %d, want %d", n, i, j, got[i*n+j], want)
				}
			}
		}
		m.Release()
	}
	opPanics[*tensor.UsageError](t, "CausalMask(0)", func() { tensor.CausalMask(d, 0) }, "CausalMask", "0")
	opPanics[*tensor.UsageError](t, "CausalMask(65536)", func() { tensor.CausalMask(d, 65536) }, "CausalMask", "65536")
}
