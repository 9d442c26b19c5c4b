package tensor_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Out-of-range indices: Embedding, IndexSelect, Gather and their backward
// ops raise the device's assert, as the losses do for a bad class index,
// but matching ErrBadIndex. Each test runs on the default device and on a
// deterministic one (its kernels take other paths: det_add in
// embedding_backward).

// badValues are indices outside [0, bound): negative, the bound itself, and
// the extremes of int32.
func badValues(bound int) []int32 { return []int32{-1, int32(bound), math.MaxInt32, math.MinInt32} }

// bothModes runs f on the default device and on a deterministic one.
func bothModes(t *testing.T, f func(t *testing.T, d *vk.Device)) {
	for _, det := range []bool{false, true} {
		t.Run(fmt.Sprintf("deterministic %v", det), func(t *testing.T) {
			f(t, devtest.Open(t, vk.Options{Deterministic: det}))
		})
	}
}

// requireBadIndex checks that err is the device-side assert of op for index
// value at row, out of [0, bound), and words itself as one.
func requireBadIndex(t *testing.T, err error, op string, row int, value int32, bound int) {
	t.Helper()
	require.ErrorIs(t, err, tensor.ErrBadIndex)
	require.NotErrorIs(t, err, tensor.ErrBadTarget)
	var ae *tensor.AssertError
	require.True(t, errors.As(err, &ae), "%v (%T) is no *tensor.AssertError", err, err)
	require.Equal(t, tensor.AssertError{Op: op, Err: tensor.ErrBadIndex, Row: row, Value: int64(value), Bound: bound}, *ae)
	require.Contains(t, err.Error(), fmt.Sprintf("tensor: %s: device-side assert: row %d has index %d, outside [0, %d)", op, row, value, bound))
}

// requireNaNOr checks got against want bit for bit, NaN in want matching
// any NaN.
func requireNaNOr(t *testing.T, what string, got, want []float32) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		if want[i] != want[i] {
			require.Truef(t, got[i] != got[i], "%s[%d]: %g, want NaN", what, i, got[i])
		} else {
			require.Equalf(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "%s[%d]", what, i)
		}
	}
}

// TestBadIndexRows: Embedding and IndexSelect over indices with one out of
// range, in every floating dtype and with rows of whole texels (8 columns,
// the texel form on lavapipe) or not (7): the first read returns the
// *AssertError naming the op, the index's position, the index and the
// bound; the read after reads the rows, NaN for the bad one and the others
// unchanged; a lookup with good indices then reads normally.
func TestBadIndexRows(t *testing.T) {
	bothModes(t, func(t *testing.T, d *vk.Device) {
		const vocab = 9
		good := []int32{3, 0, 8, 5, 1, 2}
		for _, dt := range opDTypes {
			for _, cols := range []int{7, 8} {
				w, wv := opRand(t, d, uint64(cols), 2, dt, vocab, cols)
				for _, bad := range badValues(vocab) {
					for _, op := range []string{"Embedding", "IndexSelect"} {
						what := fmt.Sprintf("%s(%s [%d, %d], index %d)", op, dt, vocab, cols, bad)
						idx := slices.Clone(good)
						idx[4] = bad
						var y *tensor.Tensor
						if op == "Embedding" {
							y = castKeep(t, tensor.Embedding(w, castKeep(t, tensor.FromInt32(d, idx, 2, 3))))
						} else {
							y = castKeep(t, tensor.IndexSelect(w, castKeep(t, tensor.FromInt32(d, idx, 6))))
						}
						_, err := y.Float32s()
						requireBadIndex(t, err, op, 4, bad, vocab)
						requireNaNOr(t, what, opRead(t, y), ixRef(wv, vocab, cols, idx))
					}
				}
				y := castKeep(t, tensor.Embedding(w, castKeep(t, tensor.FromInt32(d, good, 6))))
				require.Equal(t, opBits(ixRef(wv, vocab, cols, good)), opBits(opRead(t, y)), "good indices after")
			}
		}
	})
}

// coordsOf returns the index of flat element e of shape.
func coordsOf(e int, shape []int) []int {
	at := make([]int, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		at[k] = e % shape[k]
		e /= shape[k]
	}
	return at
}

// TestBadIndexGather: Gather along each axis with one index out of range,
// in every floating dtype, reports it (Row the index's flat position) and
// gives NaN there and x's elements elsewhere; GatherBackward over the same
// indices reports it too and gives NaN on the bad index's line along axis
// (the elements of dx that would have summed it), the sums elsewhere.
func TestBadIndexGather(t *testing.T) {
	bothModes(t, func(t *testing.T, d *vk.Device) {
		rng := rand.New(rand.NewPCG(5, 9))
		shape := []int{3, 4, 5}
		nan := map[tensor.DType]uint32{tensor.Float32: 0x7FC00000, tensor.Float16: 0x7E00, tensor.BFloat16: 0x7FC0}
		const at = 5 // the bad index's flat position
		for _, dt := range opDTypes {
			x, xb := lyInput(t, d, dt, 2, shape...)
			for axis := range shape {
				is := []int{2, 3, 4}
				is[axis] = 7
				idx := make([]int32, opShapeLen(is))
				for i := range idx {
					idx[i] = int32(rng.IntN(shape[axis]))
				}
				dy, dyv := opRand(t, d, uint64(axis), 2, dt, is...)
				for _, bad := range badValues(shape[axis]) {
					what := fmt.Sprintf("Gather(%s%v, %d, index %d)", dt, shape, axis, bad)
					idx[at] = bad
					ix := castKeep(t, tensor.FromInt32(d, idx, is...))
					y := castKeep(t, tensor.Gather(x, axis, ix))
					_, err := y.Bytes()
					requireBadIndex(t, err, "Gather", at, bad, shape[axis])
					lyWant(t, what, y, dt, is, ref.Gather(xb, shape, axis, idx, is, nan[dt]))

					dx := castKeep(t, tensor.GatherBackward(dy, ix, axis, shape...))
					_, err = dx.Float32s()
					requireBadIndex(t, err, "GatherBackward", at, bad, shape[axis])
					got := opRead(t, dx)
					want, scale := ref.GatherBackward(dyv, idx, is, shape, axis)
					line := coordsOf(at, is)
					var g32 []float32
					var w64, s64 []float64
					for e := range got {
						c := coordsOf(e, shape)
						on := true
						for k := range c {
							on = on && (k == axis || c[k] == line[k])
						}
						if on {
							require.Truef(t, math.IsNaN(float64(got[e])), "%s: dx%v = %g, want NaN", what, c, got[e])
						} else {
							g32, w64, s64 = append(g32, got[e]), append(w64, want[e]), append(s64, scale[e])
						}
					}
					ref.Check(t, "Backward of "+what, g32, w64, s64, ref.Tol(tensor.Float32, 8))
				}
				idx[at] = 0
			}
		}
	})
}

// TestBadIndexGrads: EmbeddingBackward over indices with one out of range
// (in the first dispatch, and in a later one of a long list) reports it and
// makes the whole gradient NaN, whatever dy's dtype, since the bad row has
// nowhere to go; with the index mended it sums as before.
func TestBadIndexGrads(t *testing.T) {
	bothModes(t, func(t *testing.T, d *vk.Device) {
		rng := rand.New(rand.NewPCG(5, 7))
		cases := []struct{ vocab, n, cols, at int }{{9, 6, 7, 4}, {70, 5, 33, 0}, {3, 40000, 2, 20000}}
		for _, dt := range opDTypes {
			for ci, c := range cases {
				idx := make([]int32, c.n)
				for i := range idx {
					idx[i] = int32(rng.IntN(c.vocab))
				}
				dy, dyv := opRand(t, d, uint64(ci), 1, dt, c.n, c.cols)
				bads := badValues(c.vocab)
				if c.n > 1000 {
					bads = bads[:2] // the long list twice
				}
				for _, bad := range bads {
					what := fmt.Sprintf("EmbeddingBackward(%s, vocab %d, n %d, index %d at %d)", dt, c.vocab, c.n, bad, c.at)
					good := idx[c.at]
					idx[c.at] = bad
					dw := castKeep(t, tensor.EmbeddingBackward(castKeep(t, tensor.FromInt32(d, idx, c.n)), dy, c.vocab))
					idx[c.at] = good
					_, err := dw.Float32s()
					requireBadIndex(t, err, "EmbeddingBackward", c.at, bad, c.vocab)
					for i, v := range opRead(t, dw) {
						require.Truef(t, math.IsNaN(float64(v)), "%s[%d] = %g, want NaN", what, i, v)
					}
				}
				dw := castKeep(t, tensor.EmbeddingBackward(castKeep(t, tensor.FromInt32(d, idx, c.n)), dy, c.vocab))
				abs := make([]float32, len(dyv))
				for i, v := range dyv {
					abs[i] = float32(math.Abs(float64(v)))
				}
				ref.Check(t, fmt.Sprintf("EmbeddingBackward(%s, case %d) mended", dt, ci), opRead(t, dw),
					ref.EmbeddingBackward(idx, dyv, c.vocab, c.cols), ref.EmbeddingBackward(idx, abs, c.vocab, c.cols), ref.Tol(tensor.Float32, c.n))
			}
		}
	})
}
