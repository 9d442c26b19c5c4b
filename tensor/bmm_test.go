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
			d := devtest.Open(t, vk.Options{Matmul: v})
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

// TestComposedCausalAttention composes attention from the batched ops:
// softmax(q k^T * scale + mask) v over fp16 q, k, v [B, H, T, D], the
// causal mask (-1e30 above the diagonal, built on the host) added through
// MatMul's C, the probabilities rounded to fp16 for the second product, as
// autocast runs it; against float64 with the same rounding of p.
func TestComposedCausalAttention(t *testing.T) {
	d := devtest.Open(t)
	const B, H, T, D = 2, 3, 37, 16
	shape := []int{B, H, T, D}
	qv := mmRoundAll(ref.Rand(B*H*T*D, 1), mmF16)
	kv := mmRoundAll(ref.Rand(B*H*T*D, 2), mmF16)
	vv := mmRoundAll(ref.Rand(B*H*T*D, 3), mmF16)
	mask := make([]float32, B*H*T*T)
	for i := range mask {
		if r, c := i/T%T, i%T; c > r {
			mask[i] = -1e30
		}
	}
	q, k, v := mmUpload(t, d, qv, mmF16, shape...), mmUpload(t, d, kv, mmF16, shape...), mmUpload(t, d, vv, mmF16, shape...)
	m := mmUpload(t, d, mask, mmF32, B, H, T, T)
	scale := float32(0.25) // 1/sqrt(D), exact
	s := castKeep(t, tensor.MatMul(q, k, tensor.MatMulOpts{TransB: true, Alpha: scale, Beta: 1, C: m}))
	p := castKeep(t, tensor.SoftmaxAxis(s, -1))
	p16 := castKeep(t, tensor.Cast(p, mmF16))
	out := castKeep(t, tensor.MatMul(p16, v, tensor.MatMulOpts{}))

	sw, _, _ := ref.MatMulBroadcast(qv, shape, kv, shape, false, true)
	for i := range sw {
		sw[i] = sw[i]*float64(scale) + float64(mask[i])
	}
	pw, _, _ := ref.SoftmaxAxis(mmRoundAll(f32s(sw), mmF32), []int{B, H, T, T}, 3)
	pg := opRead(t, p)
	ref.Check(t, "attention p", pg, pw, nil, ref.Tol(mmF32, T+D+ref.ExpRoundings))
	want, sc, ws := ref.MatMulBroadcast(mmRoundAll(f32s(pw), mmF16), []int{B, H, T, T}, vv, shape, false, false)
	require.Equal(t, ws, out.Shape())
	// p's fp16 rounding on the device may differ from the reference's by
	// one unit where p's fp32 values differ: the tolerance allows it.
	ref.Check(t, "attention out", opRead(t, out), want, sc, 2*ref.Unit(mmF16)+ref.Tol(mmF32, T))
	for r := range T { // causal: row r attends to columns <= r only
		for c := r + 1; c < T; c++ {
			require.Zero(t, pg[r*T+c], "p[0, 0, %d, %d]", r, c)
		}
	}
}
