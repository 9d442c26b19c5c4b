package tensor_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// TestMultinomial draws from unnormalised rows in every floating dtype:
// each column's share of the draws is within 5 standard deviations of
// its probability, a zero-probability column is never drawn, the same
// seed gives the same draws and another seed others, and [n] probs give
// [samples] draws.
func TestMultinomial(t *testing.T) {
	d := devtest.Open(t)
	weights := [][]float32{{1, 0, 3, 6}, {0, 0, 5, 0}, {2, 2, 2, 2}}
	const samples = 4000
	var flat []float32
	for _, w := range weights {
		flat = append(flat, w...)
	}
	for _, dt := range opDTypes {
		x, _ := opInput(t, d, flat, dt, len(weights), 4)
		draws, err := castKeep(t, tensor.Multinomial(x, samples, 7)).Int32s()
		require.NoError(t, err)
		require.Len(t, draws, len(weights)*samples)
		for r, w := range weights {
			total := float32(0)
			for _, v := range w {
				total += v
			}
			counts := make([]int, 4)
			for _, j := range draws[r*samples : (r+1)*samples] {
				require.True(t, j >= 0 && j < 4, "%s row %d: draw %d", dt, r, j)
				counts[j]++
			}
			for j, v := range w {
				pj := float64(v / total)
				sd := math.Sqrt(samples * pj * (1 - pj))
				if v == 0 {
					require.Zero(t, counts[j], "%s row %d: column %d has probability 0", dt, r, j)
				} else if math.Abs(float64(counts[j])-samples*pj) > 5*sd+1 {
					t.Errorf("%s row %d column %d: %d draws of %d, want about %.0f", dt, r, j, counts[j], samples, samples*pj)
				}
			}
		}
		again, err := castKeep(t, tensor.Multinomial(x, samples, 7)).Int32s()
		require.NoError(t, err)
		require.Equal(t, draws, again, "the same seed")
		other, err := castKeep(t, tensor.Multinomial(x, samples, 8)).Int32s()
		require.NoError(t, err)
		require.NotEqual(t, draws, other, "another seed")
	}
	one := tensor.FromFloat32(d, []float32{0, 1}, 2)
	defer one.Release()
	y := castKeep(t, tensor.Multinomial(one, 5, 1))
	require.Equal(t, []int{5}, y.Shape())
	got, err := y.Int32s()
	require.NoError(t, err)
	require.Equal(t, []int32{1, 1, 1, 1, 1}, got)
}

// TestMultinomialBadRows: a row with a negative, NaN or infinite entry,
// or summing to 0, raises the device's assert, read as an *AssertError
// matching ErrBadProbs that names the row and the column (-1 for a zero
// sum); the read after it is clean. Misuse panics.
func TestMultinomialBadRows(t *testing.T) {
	d := devtest.Open(t)
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	for _, c := range []struct {
		row      []float32
		col      int64
		contains string
	}{
		{[]float32{1, -1, 2}, 1, "column 1 negative, NaN or infinite"},
		{[]float32{1, 2, nan}, 2, "column 2"},
		{[]float32{inf, 1, 1}, 0, "column 0"},
		{[]float32{0, 0, 0}, -1, "row 1 of the probabilities sums to 0"},
	} {
		for _, dt := range opDTypes {
			x, _ := opInput(t, d, append([]float32{1, 1, 1}, c.row...), dt, 2, 3)
			y := castKeep(t, tensor.Multinomial(x, 3, 1))
			_, err := y.Int32s()
			var ae *tensor.AssertError
			require.True(t, errors.As(err, &ae), "%s %v: %v", dt, c.row, err)
			require.ErrorIs(t, err, tensor.ErrBadProbs)
			require.Equal(t, tensor.AssertError{Op: "Multinomial", Err: tensor.ErrBadProbs, Row: 1, Value: c.col, Bound: 3}, *ae)
			require.Contains(t, err.Error(), c.contains)
			got, err := y.Int32s()
			require.NoError(t, err, "the read after the assert")
			require.Equal(t, []int32{-1, -1, -1}, got[3:], "a bad row's draws")
		}
	}
	x := tensor.FromFloat32(d, []float32{1, 2}, 2)
	defer x.Release()
	ints := tensor.FromInt32(d, []int32{1, 2}, 2)
	defer ints.Release()
	opPanics[*tensor.UsageError](t, "0 samples", func() { tensor.Multinomial(x, 0, 1) }, "Multinomial", "samples")
	opPanics[*tensor.DTypeError](t, "int32 probs", func() { tensor.Multinomial(ints, 1, 1) }, "Multinomial", "int32")
	cube := tensor.Zeros(d, tensor.Float32, 1, 1, 2)
	defer cube.Release()
	opPanics[*tensor.UsageError](t, "3-D probs", func() { tensor.Multinomial(cube, 1, 1) }, "Multinomial", "[n] or [rows, n]")
}
