package tensor_test

import (
	"fmt"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestLayerNormLongRows runs rows many times longer than a workgroup, past
// where CPU drivers give each invocation a whole row, forward and
// backward, against the float64 reference.
func TestLayerNormLongRows(t *testing.T) {
	checkLayerNorm(t, devtest.Open(t), 3, 2053)
}

// TestLayerNormManyRows runs more rows than the texel forms' invocations
// can each loop over within lavapipe's limit on one workgroup: rows of
// 4096 allow an invocation 21 rows forward and 31 backward, and one
// workgroup of 64 would give each 35. Their grid grows instead, and every
// row is normalized.
func TestLayerNormManyRows(t *testing.T) {
	d := devtest.Open(t)
	tensor.WithTexGroups(1, func() { checkLayerNorm(t, d, 2200, 4096) })
}

// checkLayerNorm checks LayerNorm and its backward pass over [rows, cols]
// against the float64 reference.
func checkLayerNorm(t *testing.T, d *vk.Device, rows, cols int) {
	t.Helper()
	const eps = 1e-5
	x, xv := opRand(t, d, 21, 2, tensor.Float32, rows, cols)
	gamma, gv := opRand(t, d, 22, 1.5, tensor.Float32, cols)
	beta, bv := opRand(t, d, 23, 1, tensor.Float32, cols)
	dy, dyv := opRand(t, d, 24, 1, tensor.Float32, rows, cols)
	r := nnLayerNormRef(xv, gv, bv, dyv, cols, eps)
	tol := ref.Tol(tensor.Float32, 4*cols)
	what := fmt.Sprintf("LayerNorm [%d %d]", rows, cols)
	y, stats := tensor.LayerNorm(x, gamma, beta, eps)
	dx, dgamma, dbeta := tensor.LayerNormBackward(dy, x, gamma, stats)
	for _, o := range []*tensor.Tensor{y, stats, dx, dgamma, dbeta} {
		defer o.Release()
	}
	ref.Check(t, what+" y", opRead(t, y), r.y, r.yScale, tol)
	ref.Check(t, what+" dx", opRead(t, dx), r.dx, r.dxScale, tol)
	ref.Check(t, what+" stats", opRead(t, stats), r.stats, nil, tol)
	ref.Check(t, what+" dgamma", opRead(t, dgamma), r.dgamma, r.gbAbs, tol)
}
