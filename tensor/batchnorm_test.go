package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
)

// TestBatchNorm: the training forward over several batches against the
// float64 reference, with the running statistics updated on the device by
// PyTorch's formula (momentum, unbiased variance) and the batch count; then
// the eval forward with the running statistics the device kept.
func TestBatchNorm(t *testing.T) {
	d := devtest.Open(t)
	const eps, momentum = 1e-5, 0.1
	for _, shape := range [][]int{{2, 3, 4, 5}, {4, 2}, {3, 5, 1, 70}} {
		n, c := shape[0], shape[1]
		s := opShapeLen(shape) / (n * c)
		what := fmt.Sprintf("BatchNorm %v", shape)
		gamma, gv := opRand(t, d, 12, 1.5, tensor.Float32, c)
		beta, bv := opRand(t, d, 13, 1, tensor.Float32, c)
		run := &tensor.BatchNormRunning{Mean: tensor.Zeros(d, tensor.Float32, c), Var: tensor.Full(d, tensor.Float32, 1, c),
			Count: tensor.Zeros(d, tensor.Int32, 1)}
		for _, r := range []*tensor.Tensor{run.Mean, run.Var, run.Count} {
			t.Cleanup(r.Release)
		}
		rm, rv := make([]float64, c), make([]float64, c)
		for i := range rv {
			rv[i] = 1
		}
		g64, b64 := to64s(gv), to64s(bv)
		tol := ref.Tol(tensor.Float32, 4*n*s)
		for step := range 3 {
			x, xv := opRand(t, d, uint64(20+step), 2, tensor.Float32, shape...)
			y, stats := tensor.BatchNorm(x, gamma, beta, tensor.BatchNormOpts{Training: true, Running: run, Momentum: momentum, Eps: eps})
			t.Cleanup(y.Release)
			t.Cleanup(stats.Release)
			want, mean, uvar := ref.BatchNorm64(to64s(xv), g64, b64, nil, nil, n, c, s, eps, true)
			ref.Check(t, fmt.Sprintf("%s step %d y", what, step), opRead(t, y), want, tMaxScale64(want), tol)
			ref.RunningUpdate64(rm, mean, momentum)
			ref.RunningUpdate64(rv, uvar, momentum)
			require.Equal(t, []int{c, 2}, stats.Shape())
		}
		ref.Check(t, what+" running mean", opRead(t, run.Mean), rm, tMaxScale64(rm), tol)
		ref.Check(t, what+" running var", opRead(t, run.Var), rv, tMaxScale64(rv), tol)
		cnt, err := run.Count.Int32s()
		require.NoError(t, err)
		require.Equal(t, []int32{3}, cnt, what+" batches tracked")

		x, xv := opRand(t, d, 30, 2, tensor.Float32, shape...)
		y, _ := tensor.BatchNorm(x, gamma, beta, tensor.BatchNormOpts{Running: run, Eps: eps})
		t.Cleanup(y.Release)
		want, _, _ := ref.BatchNorm64(to64s(xv), g64, b64, rm, rv, n, c, s, eps, false)
		ref.Check(t, what+" eval y", opRead(t, y), want, tMaxScale64(want), tol)
		cnt, err = run.Count.Int32s()
		require.NoError(t, err)
		require.Equal(t, []int32{3}, cnt, what+" eval counts no batch")
	}
}

func TestBatchNormPanics(t *testing.T) {
	d := devtest.Open(t)
	x, _ := opRand(t, d, 1, 1, tensor.Float32, 2, 3, 4)
	g3, _ := opRand(t, d, 2, 1, tensor.Float32, 3)
	g4, _ := opRand(t, d, 3, 1, tensor.Float32, 4)
	one, _ := opRand(t, d, 4, 1, tensor.Float32, 1, 3)
	h, _ := opRand(t, d, 5, 1, tensor.Float16, 2, 3, 4)
	opPanics[*tensor.ShapeError](t, "gamma of another length", func() { tensor.BatchNorm(x, g4, g3, tensor.BatchNormOpts{Training: true}) }, "BatchNorm", "[2 3 4]", "[4]")
	opPanics[*tensor.ShapeError](t, "one value per channel", func() { tensor.BatchNorm(one, g3, g3, tensor.BatchNormOpts{Training: true}) }, "more than one value")
	opPanics[*tensor.DTypeError](t, "fp16 x", func() { tensor.BatchNorm(h, g3, g3, tensor.BatchNormOpts{Training: true}) }, "BatchNorm")
	opPanics[*tensor.UsageError](t, "eval without running statistics", func() { tensor.BatchNorm(x, g3, g3, tensor.BatchNormOpts{}) }, "running")
	f1, _ := opRand(t, d, 6, 1, tensor.Float32, 1)
	bad := &tensor.BatchNormRunning{Mean: g3, Var: g4, Count: f1}
	opPanics[*tensor.ShapeError](t, "running var of another length", func() { tensor.BatchNorm(x, g3, g3, tensor.BatchNormOpts{Running: bad}) }, "running")
	v3, _ := opRand(t, d, 7, 1, tensor.Float32, 3)
	bad = &tensor.BatchNormRunning{Mean: g3, Var: v3, Count: f1}
	opPanics[*tensor.DTypeError](t, "float count", func() { tensor.BatchNorm(x, g3, g3, tensor.BatchNormOpts{Running: bad}) }, "int32")
	opPanics[*tensor.ShapeError](t, "backward dy shape", func() { tensor.BatchNormBackward(g3, x, g3, g3, true) }, "BatchNormBackward")
}

func to64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func tMaxScale64(want []float64) []float64 {
	m := 0.0
	for _, w := range want {
		m = max(m, math.Abs(w))
	}
	out := make([]float64, len(want))
	for i := range out {
		out[i] = m + 1
	}
	return out
}
