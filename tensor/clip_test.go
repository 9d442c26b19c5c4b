package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// clipShapes are one element, a matrix, and two longer than a chunk of d's
// tables, one of them not a multiple of it.
func clipShapes(d *vk.Device) [][]int {
	c := tensor.UnscaleChunk(d)
	return [][]int{{1}, {7, 5}, {c * 2}, {c*2 + 3617}}
}

func TestClipNorm(t *testing.T) {
	defer tensor.SetTableChunks(2, 1)() // on a CPU driver, chunks longer than a GPU's, the last shorter
	d := devtest.Open(t)
	for _, c := range []struct {
		name    string
		maxNorm float32
		plant   float32 // put in tensor 1, element 3, unless 0
	}{
		{"clips", 0.5, 0},
		{"below max", 1000, 0},
		{"inf max", float32(math.Inf(1)), 0},
		{"inf gradient", 1, float32(math.Inf(-1))},
		{"nan gradient", 1, float32(math.NaN())},
		{"huge gradient", 1, 3e19}, // its square overflows fp32: the norm is inf, as in PyTorch
	} {
		t.Run(c.name, func(t *testing.T) {
			var xs []*tensor.Tensor
			var held [][]float32
			for i, shape := range clipShapes(d) {
				x, v := opRand(t, d, uint64(40+i), 0.5, tensor.Float32, shape...)
				if c.plant != 0 && i == 1 {
					v[3] = c.plant
					require.NoError(t, x.SetBytes(optBytes(v)))
				}
				xs, held = append(xs, x), append(held, v)
			}
			var tab tensor.BlockTable
			defer tab.Close()
			norm, err := tensor.ClipNorm(xs, c.maxNorm, 1e-6, &tab)
			require.NoError(t, err)
			defer norm.Release()
			wantNorm, want := ref.ClipNorm(held, float64(c.maxNorm), 1e-6)
			if c.plant == 3e19 {
				wantNorm = math.Inf(1)                // fp32 sums of squares
				_, want = ref.ClipNorm(held, 0, 1e-6) // coef 0: every element 0
			}
			ref.Check(t, "norm", opRead(t, norm), []float64{wantNorm}, nil, 1e-5)
			for i, x := range xs {
				ref.Check(t, fmt.Sprintf("tensor %d", i), opRead(t, x), want[i], nil, 1e-5)
			}
			if c.maxNorm >= 1000 { // no clip: the bits stay
				for i, x := range xs {
					require.Equal(t, held[i], opRead(t, x), "tensor %d", i)
				}
			}
		})
	}
}

// TestClipNormDeterministic: the same gradients give the same bits.
func TestClipNormDeterministic(t *testing.T) {
	d := devtest.Open(t)
	var first []float32
	for range 2 {
		x, _ := opRand(t, d, 7, 1, tensor.Float32, 30000)
		var tab tensor.BlockTable
		norm, err := tensor.ClipNorm([]*tensor.Tensor{x}, 1, 1e-6, &tab)
		require.NoError(t, err)
		got := append(opRead(t, norm), opRead(t, x)...)
		norm.Release()
		tab.Close()
		if first == nil {
			first = got
		} else {
			require.Equal(t, first, got)
		}
	}
}

func TestClampValues(t *testing.T) {
	d := devtest.Open(t)
	var xs []*tensor.Tensor
	var held [][]float32
	for i, shape := range clipShapes(d) {
		x, v := opRand(t, d, uint64(50+i), 2, tensor.Float32, shape...)
		if i == 2 {
			v[0], v[1], v[2] = float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())
			require.NoError(t, x.SetBytes(optBytes(v)))
		}
		xs, held = append(xs, x), append(held, v)
	}
	var tab tensor.BlockTable
	defer tab.Close()
	require.NoError(t, tensor.ClampValues(append(xs, nil), 0.75, &tab))
	for i, x := range xs {
		ref.Check(t, fmt.Sprintf("tensor %d", i), opRead(t, x), ref.ClampValues(held[i], 0.75), nil, 0)
	}
}

func TestClipMisuse(t *testing.T) {
	d := devtest.Open(t)
	x := tensor.Zeros(d, tensor.Float32, 4)
	defer x.Release()
	h := tensor.Zeros(d, tensor.Float16, 4)
	defer h.Release()
	var tab tensor.BlockTable
	defer tab.Close()
	for name, f := range map[string]func(){
		"twice":    func() { tensor.ClipNorm([]*tensor.Tensor{x, x}, 1, 0, &tab) },
		"none":     func() { tensor.ClipNorm([]*tensor.Tensor{nil}, 1, 0, &tab) },
		"fp16":     func() { tensor.ClampValues([]*tensor.Tensor{h}, 1, &tab) },
		"zero max": func() { tensor.ClipNorm([]*tensor.Tensor{x}, 0, 0, &tab) },
		"nan clip": func() { tensor.ClampValues([]*tensor.Tensor{x}, float32(math.NaN()), &tab) },
	} {
		require.Panics(t, f, name)
	}
}

// With small memory blocks the tensors spread over several, one dispatch
// per block: the partial sums of each land in their own place.
func TestClipNormAcrossBlocks(t *testing.T) {
	d := devtest.Open(t, vk.Options{BlockSize: 64 << 10})
	var xs []*tensor.Tensor
	var held [][]float32
	for i, n := range []int{20000, 9000, 30000, 5, 17000} { // 80 KB, 36 KB, ...: several blocks
		x, v := opRand(t, d, uint64(60+i), 1, tensor.Float32, n)
		xs, held = append(xs, x), append(held, v)
	}
	var tab tensor.BlockTable
	defer tab.Close()
	norm, err := tensor.ClipNorm(xs, 2, 1e-6, &tab)
	require.NoError(t, err)
	defer norm.Release()
	require.Greater(t, tensor.TableGroups(&tab), 1, "the tensors should span several blocks")
	wantNorm, want := ref.ClipNorm(held, 2, 1e-6)
	ref.Check(t, "norm", opRead(t, norm), []float64{wantNorm}, nil, 1e-5)
	for i, x := range xs {
		ref.Check(t, fmt.Sprintf("tensor %d", i), opRead(t, x), want[i], nil, 1e-5)
	}
}

// BenchmarkClipNorm clips 16M fp32 elements in four tensors: the norm
// reads them once and the scale reads and writes them, 192 MiB a call.
func BenchmarkClipNorm(b *testing.B) {
	d := devtest.Open(b)
	var xs []*tensor.Tensor
	for range 4 {
		x := tensor.Full(d, tensor.Float32, 0.5, opBenchN/4)
		b.Cleanup(x.Release)
		xs = append(xs, x)
	}
	var tab tensor.BlockTable
	defer tab.Close()
	b.SetBytes(3 * 4 * opBenchN)
	for b.Loop() {
		norm, err := tensor.ClipNorm(xs, 1, 1e-6, &tab)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := norm.Item(); err != nil {
			b.Fatal(err)
		}
		norm.Release()
	}
}
