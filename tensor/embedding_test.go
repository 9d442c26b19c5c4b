package tensor_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
)

// TestEmbedding looks rows up with indices of several shapes in every
// floating dtype, bit for bit (out-of-range indices: TestBadIndexRows).
func TestEmbedding(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, dt := range opDTypes {
		for _, ishape := range [][]int{{}, {5}, {2, 3}, {3, 1, 4}} {
			const vocab, dim = 9, 7 // an odd row length: 16-bit rows straddle words
			w, wv := opRand(t, d, 5, 2, dt, vocab, dim)
			n := opShapeLen(ishape)
			idx := make([]int32, n)
			for i := range idx {
				idx[i] = int32(rng.IntN(vocab))
			}
			what := fmt.Sprintf("Embedding(%s, %v)", dt, ishape)
			ix := castKeep(t, tensor.FromInt32(d, idx, ishape...))
			y := castKeep(t, tensor.Embedding(w, ix))
			require.Equal(t, append(append([]int{}, ishape...), dim), y.Shape(), what)
			require.Equal(t, dt, y.DType(), what)
			require.Equal(t, opBits(ixRef(wv, vocab, dim, idx)), opBits(opRead(t, y)), what)
		}
	}
}

// TestEmbeddingBackward sums dy's rows by index for dy of every floating
// dtype, with repeated indices (out-of-range ones: TestBadIndexGrads),
// against the float64
// reference; a long index list (several dispatches) too; and twice the
// same bits.
func TestEmbeddingBackward(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(5, 6))
	cases := []struct{ vocab, n, cols int }{{1, 1, 1}, {65, 96, 7}, {3, 17, 300}, {70, 5, 33}, {3, 70000, 2}}
	for _, dt := range opDTypes {
		for ci, c := range cases {
			if c.n > 1000 && dt != tensor.Float16 {
				continue // the long list once
			}
			idx := make([]int32, c.n)
			for i := range idx {
				idx[i] = int32(rng.IntN(c.vocab))
			}
			what := fmt.Sprintf("EmbeddingBackward(%s, vocab %d, n %d, cols %d)", dt, c.vocab, c.n, c.cols)
			ishape := []int{c.n}
			if c.n%2 == 0 {
				ishape = []int{2, c.n / 2}
			}
			ix := castKeep(t, tensor.FromInt32(d, idx, ishape...))
			dy, dyv := opRand(t, d, uint64(ci), 1, dt, append(append([]int{}, ishape...), c.cols)...)
			dw := castKeep(t, tensor.EmbeddingBackward(ix, dy, c.vocab))
			require.Equal(t, []int{c.vocab, c.cols}, dw.Shape(), what)
			require.Equal(t, tensor.Float32, dw.DType(), what)
			got := opRead(t, dw)
			want := ref.EmbeddingBackward(idx, dyv, c.vocab, c.cols)
			abs := make([]float32, len(dyv))
			for i, v := range dyv {
				abs[i] = float32(math.Abs(float64(v)))
			}
			scale := ref.EmbeddingBackward(idx, abs, c.vocab, c.cols)
			ref.Check(t, what, got, want, scale, ref.Tol(tensor.Float32, c.n))
			again := castKeep(t, tensor.EmbeddingBackward(ix, dy, c.vocab))
			require.Equal(t, opBits(got), opBits(opRead(t, again)), what+": not deterministic")
		}
	}
}

func TestEmbeddingPanics(t *testing.T) {
	d := devtest.Open(t)
	z := func(dt tensor.DType, shape ...int) *tensor.Tensor {
		x := tensor.Zeros(d, dt, shape...)
		t.Cleanup(x.Release)
		return x
	}
	f32, i32 := tensor.Float32, tensor.Int32
	opPanics[*tensor.DTypeError](t, "float idx", func() { tensor.Embedding(z(f32, 4, 3), z(f32, 2)) }, "Embedding", "float32")
	opPanics[*tensor.DTypeError](t, "int32 w", func() { tensor.Embedding(z(i32, 4, 3), z(i32, 2)) }, "Embedding", "int32")
	opPanics[*tensor.ShapeError](t, "1-D w", func() { tensor.Embedding(z(f32, 4), z(i32, 2)) }, "Embedding", "[4]", "[2]")
	opPanics[*tensor.DTypeError](t, "backward float idx", func() { tensor.EmbeddingBackward(z(f32, 2), z(f32, 2, 3), 4) }, "EmbeddingBackward", "float32")
	opPanics[*tensor.DTypeError](t, "backward int dy", func() { tensor.EmbeddingBackward(z(i32, 2), z(i32, 2, 3), 4) }, "EmbeddingBackward", "int32")
	opPanics[*tensor.ShapeError](t, "backward shapes", func() { tensor.EmbeddingBackward(z(i32, 2, 2), z(f32, 4, 3), 4) }, "EmbeddingBackward", "[2 2]", "[4 3]")
	opPanics[*tensor.UsageError](t, "backward vocab 0", func() { tensor.EmbeddingBackward(z(i32, 2), z(f32, 2, 3), 0) }, "EmbeddingBackward", "vocab")
}

// TestLayerNormNoBias: a nil beta is a zero beta, and the backward without
// beta gives the same dx and dgamma.
func TestLayerNormNoBias(t *testing.T) {
	d := devtest.Open(t)
	const eps = 1e-5
	for _, shape := range [][]int{{5, 7}, {3, 2, 16}} {
		cols := shape[len(shape)-1]
		x, xv := opRand(t, d, 21, 2, tensor.Float32, shape...)
		gamma, gv := opRand(t, d, 22, 1.5, tensor.Float32, cols)
		dy, dyv := opRand(t, d, 24, 1, tensor.Float32, shape...)
		r := nnLayerNormRef(xv, gv, make([]float32, cols), dyv, cols, eps)
		tol := ref.Tol(tensor.Float32, 4*cols)
		what := fmt.Sprintf("LayerNorm no bias %v", shape)
		y, stats := tensor.LayerNorm(x, gamma, nil, eps)
		dx, dgamma := tensor.LayerNormBackwardNoBias(dy, x, gamma, castKeep(t, stats))
		ref.Check(t, what+" y", opRead(t, castKeep(t, y)), r.y, r.yScale, tol)
		ref.Check(t, what+" dx", opRead(t, castKeep(t, dx)), r.dx, r.dxScale, tol)
		ref.Check(t, what+" dgamma", opRead(t, castKeep(t, dgamma)), r.dgamma, r.gbAbs, tol)
	}
	z := tensor.Zeros(d, tensor.Float32, 4, 3)
	defer z.Release()
	g := tensor.Zeros(d, tensor.Float32, 2)
	defer g.Release()
	opPanics[*tensor.ShapeError](t, "gamma", func() { tensor.LayerNorm(z, g, nil, eps) }, "LayerNorm", "[4 3]", "[2]")
}
