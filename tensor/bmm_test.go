package tensor_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// bmmCase is a batched MatMul whose batch dimensions broadcast.
type bmmCase struct {
	a, b           []int // stored shapes
	transA, transB bool
	da, db, out    tensor.DType
}

func (c bmmCase) String() string {
	return fmt.Sprintf("%s%v(T%v) @ %s%v(T%v) -> %s", c.da, c.a, c.transA, c.db, c.b, c.transB, c.out)
}

// bmmCases cover full batches (attention's [B, H, T, D] @ [B, H, D, T] and
// its q k^T), one matrix serving every batch on either side, a missing
// batch dimension, dimensions of 1 that broadcast on both sides (which
// need a copy), transposes, odd sizes, and sizes that fit matmul_tex.
func bmmCases() []bmmCase {
	f32, f16 := tensor.Float32, tensor.Float16
	return []bmmCase{
		{a: []int{2, 3, 5, 6}, b: []int{2, 3, 6, 5}, da: f16, db: f16, out: f32},
		{a: []int{2, 3, 5, 6}, b: []int{2, 3, 5, 6}, transB: true, da: f16, db: f16, out: f16},
		{a: []int{2, 5, 6}, b: []int{6, 7}, da: f32, db: f16, out: f32},
		{a: []int{5, 6}, b: []int{2, 6, 7}, da: f16, db: f16, out: f16},
		{a: []int{6, 5}, b: []int{3, 1, 7, 6}, transA: true, transB: true, da: f16, db: f32, out: f32},
		{a: []int{2, 1, 5, 6}, b: []int{3, 6, 7}, da: f16, db: f16, out: f16},
		{a: []int{1, 3, 6, 5}, b: []int{2, 1, 6, 4}, transA: true, da: f32, db: f32, out: f32},
		{a: []int{2, 3, 8, 16}, b: []int{1, 3, 16, 8}, da: f16, db: f16, out: f16},
		{a: []int{2, 2, 8, 16}, b: []int{2, 2, 8, 24}, transA: true, da: f16, db: f16, out: f32},
		{a: []int{1, 1, 3, 4}, b: []int{4, 2}, da: f16, db: f16, out: f16},
	}
}

// bmmStart records c with run and returns its check against the float64
// reference.
func bmmStart(t *testing.T, d *vk.Device, c bmmCase, seed uint64, run mmRun) func() {
	t.Helper()
	av := mmRoundAll(ref.Rand(mmNum(c.a), seed), c.da)
	bv := mmRoundAll(ref.Rand(mmNum(c.b), seed+1), c.db)
	out := run(mmUpload(t, d, av, c.da, c.a...), mmUpload(t, d, bv, c.db, c.b...),
		tensor.MatMulOpts{TransA: c.transA, TransB: c.transB, Out: c.out})
	t.Cleanup(out.Release)
	return func() {
		t.Helper()
		want, scale, shape := ref.MatMulBroadcast(av, c.a, bv, c.b, c.transA, c.transB)
		require.Equal(t, shape, out.Shape(), c.String())
		got, err := mmRead(out)
		require.NoError(t, err, c.String())
		k := c.a[len(c.a)-1]
		if c.transA {
			k = c.a[len(c.a)-2]
		}
		ref.Check(t, c.String(), got, want, scale, ref.Tol(c.out, k))
	}
}

// TestMatMulBroadcast runs the broadcast batches on every kernel the device
// can run, and on the cooperative-matrix emulation for fp16 operands.
func TestMatMulBroadcast(t *testing.T) {
	d := devtest.Open(t)
	for _, v := range mmVariants(d) {
		t.Run(mmName(v), func(t *testing.T) {
			t.Setenv("VKAMP_MATMUL", v)
			var checks []func()
			for i, c := range bmmCases() {
				checks = append(checks, bmmStart(t, d, c, uint64(10*i), tensor.MatMul))
			}
			for _, check := range checks {
				check()
			}
		})
	}
	t.Run("coop-emu", func(t *testing.T) {
		if d.Tier() < vk.TierStorage16 {
			t.Skipf("feature not available: matmul_coop_emu needs 16-bit storage, %s runs tier %s", d.Info().Name, d.Tier())
		}
		var checks []func()
		for i, c := range bmmCases() {
			if c.da == tensor.Float16 && c.db == tensor.Float16 {
				run := func(a, b *tensor.Tensor, o tensor.MatMulOpts) *tensor.Tensor {
					return tensor.MatMulCoop(a, b, o, "emu-small")
				}
				checks = append(checks, bmmStart(t, d, c, uint64(10*i), run))
			}
		}
		for _, check := range checks {
			check()
		}
	})
	a := mmUpload(t, d, make([]float32, 18), mmF32, 3, 2, 3)
	b := mmUpload(t, d, make([]float32, 24), mmF32, 2, 3, 4)
	func() {
		defer func() {
			se, ok := recover().(*tensor.ShapeError)
			require.True(t, ok, "batch 3 against 2 must panic with a *ShapeError")
			require.True(t, strings.Contains(se.Error(), "do not broadcast"), se.Error())
			require.Equal(t, []int{3, 2, 3}, se.A)
			require.Equal(t, []int{2, 3, 4}, se.B)
		}()
		tensor.MatMul(a, b, tensor.MatMulOpts{})
	}()
}
