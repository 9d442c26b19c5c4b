package tensor_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Tests of bf16 operands, which every matmul kernel but matmul_coop loads
// itself. bf16 -> fp32 is exact, so a bf16 product must have the bits of the
// same product on fp32 copies of its operands, on every kernel.

// mmBF16Cases put bf16 in A, B or both: odd K and odd row lengths (rows of
// A and B that start mid-word), every transpose, batches with batched and
// shared B, the generic and the specialised pipelines, shapes that fit
// matmul_tex's layout, and one large enough for lavapipe's rule to choose
// matmul_tex.
func mmBF16Cases() []mmCase {
	bf, f16, f32 := mmBF16, mmF16, mmF32
	return []mmCase{
		{m: 7, n: 9, k: 5, da: bf, db: bf, out: f32},
		{m: 1, n: 1, k: 1, da: bf, db: f32, out: bf},
		{batch: []int{3}, m: 5, n: 7, k: 3, da: bf, db: f16, out: bf, transA: true, bias: true, dbias: bf},
		{m: 33, n: 7, k: 9, da: f32, db: bf, out: f16, transB: true, alpha: 0.5, beta: -1.5, dc: bf},
		{batch: []int{2, 3}, m: 7, n: 33, k: 10, da: bf, db: bf, out: bf, transA: true, transB: true},
		{batch: []int{3}, m: 9, n: 11, k: 13, da: bf, db: bf, out: f32, sharedB: true, bias: true, dbias: f32},
		{m: 1, n: 1000, k: 7, da: bf, db: f32, out: f32},
		{m: 10, n: 6, k: 8, da: f16, db: bf, out: f32, transA: true},
		{m: 66, n: 130, k: 42, da: bf, db: bf, out: f32, alpha: 2, beta: 0.5, dc: bf, bias: true, dbias: f16},
		{m: 72, n: 66, k: 41, da: bf, db: f16, out: bf, transA: true, transB: true},
		// matmul_tex's layout: K and the contiguous dimensions multiples of 8.
		{m: 24, n: 72, k: 40, da: bf, db: bf, out: f16},
		{m: 40, n: 136, k: 16, da: bf, db: f16, out: f32, transA: true},
		{m: 16, n: 8, k: 64, da: f16, db: bf, out: bf, transB: true, bias: true, dbias: bf},
		{m: 8, n: 13, k: 16, da: bf, db: bf, out: f32, transA: true, transB: true},
		{batch: []int{3}, m: 9, n: 64, k: 8, da: bf, db: f32, out: f32, sharedB: true},
		{m: 128, n: 128, k: 128, da: bf, db: bf, out: bf},
	}
}

// mmAsF32 is c with its bf16 operands as fp32 (the same values).
func mmAsF32(c mmCase) mmCase {
	if c.da == mmBF16 {
		c.da = mmF32
	}
	if c.db == mmBF16 {
		c.db = mmF32
	}
	return c
}

// mmStartBits records c and the same product on fp32 copies of its bf16
// operands, and returns the check: the two results' bytes are equal, and
// with withRef c's result is within the float64 reference's tolerance.
func mmStartBits(t *testing.T, d *vk.Device, c mmCase, in mmInputs, withRef bool) func() {
	t.Helper()
	var outs [2]*tensor.Tensor
	grab := func(a, b *tensor.Tensor, o tensor.MatMulOpts) *tensor.Tensor {
		out := tensor.MatMul(a, b, o)
		if outs[0] == nil {
			outs[0] = out
		} else {
			outs[1] = out
		}
		return out
	}
	refCheck := mmStartWith(t, d, c, in, grab)
	mmStartWith(t, d, mmAsF32(c), in, grab)
	return func() {
		t.Helper()
		if withRef {
			refCheck()
		}
		got, err := outs[0].Bytes()
		require.NoError(t, err, c.String())
		want, err := outs[1].Bytes()
		require.NoError(t, err, c.String())
		require.True(t, bytes.Equal(got, want), "%v: bf16 operands give other bits than their fp32 copies", c)
	}
}

// TestMatMulBF16 checks bf16 operands on every kernel the device runs
// against the float64 reference, and bit for bit against the product of
// their fp32 copies.
func TestMatMulBF16(t *testing.T) {
	d := devtest.Open(t)
	for _, v := range mmVariants(d) {
		t.Run(mmName(v), func(t *testing.T) {
			d := devtest.Open(t, vk.Options{Matmul: v})
			var checks []func()
			for i, c := range mmBF16Cases() {
				if v == "texel" && !mmTexelLayout(c) {
					continue // matmul_tex would not run it: the rule's fallback
				}
				if want := mmBF16Kernels[v]; want != "" {
					a, b, o := mmOperands(t, d, c, mmRandom(c, 0))
					got, err := tensor.MatMulKernel(d, a, b, o)
					require.NoError(t, err)
					require.Equal(t, want, got, "%v", c)
				}
				checks = append(checks, mmStartBits(t, d, c, mmRandom(c, uint64(700+i)), true))
			}
			checks = append(checks, mmBF16Broadcast(t, d))
			for _, check := range checks {
				check()
			}
		})
	}
}

// mmBF16Kernels is the kernel each VKAMP_MATMUL runs with a bf16 operand:
// its own, but matmul_shared for coop, which reads fp16 only.
var mmBF16Kernels = map[string]string{"shared": "matmul_shared", "register": "matmul_reg", "subgroup": "matmul_sg",
	"quad": "matmul_quad", "texel": "matmul_tex", "coop": "matmul_shared"}

// mmTexelLayout reports whether c fits matmul_tex's layout.
func mmTexelLayout(c mmCase) bool {
	return c.k%8 == 0 && (!c.transA || c.m%8 == 0) && (c.transB || c.n%8 == 0)
}

// mmBF16Broadcast multiplies bf16 A [2, 1, 5, 7] by B [3, 7, 4] (batch
// dimensions broadcast both ways, so MatMul expands copies of both) and
// returns the check that the result has the bits of the fp32 product.
func mmBF16Broadcast(t *testing.T, d *vk.Device) func() {
	t.Helper()
	av := mmRoundAll(ref.Rand(2*5*7, 900), mmBF16)
	bv := mmRoundAll(ref.Rand(3*7*4, 901), mmBF16)
	o := tensor.MatMulOpts{Out: mmBF16}
	got := tensor.MatMul(mmUpload(t, d, av, mmBF16, 2, 1, 5, 7), mmUpload(t, d, bv, mmBF16, 3, 7, 4), o)
	t.Cleanup(got.Release)
	want := tensor.MatMul(mmUpload(t, d, av, mmF32, 2, 1, 5, 7), mmUpload(t, d, bv, mmF32, 3, 7, 4), o)
	t.Cleanup(want.Release)
	return func() {
		t.Helper()
		require.Equal(t, []int{2, 3, 5, 4}, got.Shape())
		g, err := got.Bytes()
		require.NoError(t, err)
		w, err := want.Bytes()
		require.NoError(t, err)
		require.True(t, bytes.Equal(g, w), "broadcast bf16 product differs from the fp32 one")
	}
}

// TestMatMulBF16NoCast checks that a bf16 MatMul records one dispatch, the
// kernel's, as an fp32 one does: no widening copy of its operands.
func TestMatMulBF16NoCast(t *testing.T) {
	d := devtest.Open(t)
	v := mmRoundAll(ref.Rand(6*8, 3), mmBF16)
	count := func(dt tensor.DType) uint64 {
		a, b := mmUpload(t, d, v, dt, 6, 8), mmUpload(t, d, v, dt, 8, 6)
		before := d.Stats().Dispatches
		out := tensor.MatMul(a, b, tensor.MatMulOpts{Out: mmBF16})
		n := d.Stats().Dispatches - before
		_, err := out.Bytes()
		require.NoError(t, err)
		out.Release()
		return n
	}
	require.Equal(t, count(mmF32), count(mmBF16), "dispatches of a bf16 MatMul against an fp32 one")
	require.Equal(t, uint64(1), count(mmBF16))
}

// detBF16Hashes pins the outputs of bf16 products in deterministic mode,
// computed before the kernels loaded bf16 (MatMul then widened bf16 to an
// fp32 copy): loading it directly must not change a bit.
var detBF16Hashes = map[string]string{
	"MatMul/bf16/[3]5x7x13_T10_bf16bf_biasbf": "44fcee38227b1051d5001ee6fb52a800f690c9998a7dc613d77b4266bf9e62ed",
	"MatMul/bf16/[]33x10x9_T01_32bf32_b0.5bf": "385a61ecde722dc651968b405be4f78430329627bed69039acb118b920a3bd6b",
	"MatMul/bf16/[]66x72x40_T11_bfbfbf":       "908f69bed9af0778ba9f396b05118e4722491ee86ebd897f4b5ba6d46699c0dc",
	"MatMul/bf16/[]7x9x5_bfbf32":              "1393ccaec5e5bc5780320d161b403ed7ad436978fa98f4416ca309f111dbb696",
}

// TestDeterministicMatMulBF16 runs bf16 products in deterministic mode,
// subnormal bf16 values included, and checks them against the pinned
// hashes and bit for bit against the products of fp32 copies.
func TestDeterministicMatMulBF16(t *testing.T) {
	d := devtest.Open(t, vk.Options{Deterministic: true})
	outs := map[string][]byte{}
	for i, c := range []mmCase{
		{m: 7, n: 9, k: 5, da: mmBF16, db: mmBF16, out: mmF32},
		{batch: []int{3}, m: 5, n: 7, k: 13, da: mmBF16, db: mmF16, out: mmBF16, transA: true, bias: true, dbias: mmBF16},
		{m: 33, n: 10, k: 9, da: mmF32, db: mmBF16, out: mmF32, transB: true, beta: 0.5, dc: mmBF16},
		{m: 66, n: 72, k: 40, da: mmBF16, db: mmBF16, out: mmBF16, transA: true, transB: true},
	} {
		in := mmRandom(c, uint64(800+i))
		for j := range in.a { // subnormal bf16 values, which the mode takes as zero
			if j%5 == 0 {
				in.a[j] = mmBF16Value(mmBF16Bits(in.a[j] * 0x1p-127))
			}
		}
		mmStartBits(t, d, c, in, false)() // no reference: the mode takes subnormals as zero
		got := tensor.MatMul(mmOperands(t, d, c, in))
		b, err := got.Bytes()
		got.Release()
		require.NoError(t, err)
		outs[fmt.Sprintf("MatMul/bf16/%v", c)] = b
	}
	checkPinnedHashes(t, outs, detBF16Hashes)
}
