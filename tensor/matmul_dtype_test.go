package tensor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Tests of MatMul's epilogue dtypes: C, the bias and the result may each be
// fp32, fp16 or bf16 (the kernels take their dtype codes), and so may A and
// B (matmul_bf16_test.go covers bf16 operands on every kernel).

// mmBF16Bits rounds f to bfloat16 bits, to nearest even (overflowing to inf;
// NaN stays NaN, quiet): the nearer of the two bf16 values around f, by
// float64 distance, not the shaders' integer trick.
func mmBF16Bits(f float32) uint16 {
	x := math.Float32bits(f)
	sign, mag := uint16(x>>16)&0x8000, x&0x7FFFFFFF
	if mag > 0x7F800000 {
		return sign | 0x7FC0 | uint16(mag>>16)
	}
	lo := uint16(mag >> 16)
	if mag&0xFFFF == 0 {
		return sign | lo
	}
	hi := lo + 1 // 0x7F80, inf, stands for 2^128 here
	v := float64(math.Float32frombits(mag))
	dlo := v - float64(mmBF16Value(lo))
	dhi := float64(mmBF16Value(hi)) - v
	if hi == 0x7F80 {
		dhi = math.Ldexp(1, 128) - v
	}
	if dhi < dlo || dhi == dlo && hi&1 == 0 {
		return sign | hi
	}
	return sign | lo
}

func mmBF16Value(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// mmRoundAll rounds v to dt's values.
func mmRoundAll(v []float32, dt tensor.DType) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		switch dt {
		case mmBF16:
			out[i] = mmBF16Value(mmBF16Bits(x))
		case mmF16:
			out[i] = float16.Fromfloat32(x).Float32()
		default:
			out[i] = x
		}
	}
	return out
}

// mmRead waits for out's value as float32s, bf16 included.
func mmRead(out *tensor.Tensor) ([]float32, error) {
	if out.DType() != mmBF16 {
		return out.Float32s()
	}
	bits, err := out.BFloat16Bits()
	vals := make([]float32, len(bits))
	for i, b := range bits {
		vals[i] = mmBF16Value(b)
	}
	return vals, err
}

// mmEpilogueCases put C, the bias and the result in every dtype: the
// generic pipeline of small problems with an odd N and odd batches (fp16
// and bf16 rows start mid-word), a specialised one with ragged edges, and
// one that lavapipe's rule runs on matmul_tex.
func mmEpilogueCases() []mmCase {
	return []mmCase{
		{batch: []int{3}, m: 7, n: 9, k: 5, da: mmF16, db: mmF16, out: mmBF16, beta: 1.5, dc: mmBF16, bias: true, dbias: mmBF16},
		{m: 5, n: 6, k: 7, da: mmF32, db: mmF32, out: mmF32, transB: true, beta: -1, dc: mmBF16},
		{m: 9, n: 11, k: 13, da: mmF32, db: mmF16, out: mmF16, bias: true, dbias: mmBF16},
		{m: 66, n: 130, k: 42, da: mmF16, db: mmF16, out: mmBF16, alpha: 2, beta: 0.5, dc: mmF32, bias: true, dbias: mmF16},
		{m: 72, n: 66, k: 40, da: mmF16, db: mmF16, out: mmF32, transA: true, beta: 2, dc: mmBF16, bias: true, dbias: mmBF16},
		{m: 128, n: 128, k: 128, da: mmF16, db: mmF16, out: mmBF16, beta: 1, dc: mmF16, bias: true, dbias: mmBF16},
		// bf16 operands, as bf16 autocast gives them.
		{batch: []int{2}, m: 9, n: 11, k: 13, da: mmBF16, db: mmBF16, out: mmBF16, bias: true, dbias: mmBF16},
		{m: 64, n: 72, k: 40, da: mmBF16, db: mmBF16, out: mmF32, transB: true},
		{m: 5, n: 6, k: 7, da: mmBF16, db: mmF16, out: mmF16, transA: true, beta: 1, dc: mmF32},
	}
}

// TestMatMulEpilogueDTypes checks bf16 C, bias and results against the
// float64 reference on every kernel the device runs (and on matmul_coop's
// emulation where 16-bit storage allows), and the rounding of bf16 results
// bit for bit: ties to even, overflow to inf, infinities and NaN kept.
func TestMatMulEpilogueDTypes(t *testing.T) {
	d := devtest.Open(t)
	run := mmRun(tensor.MatMul)
	for _, v := range mmVariants(d) {
		t.Run(mmName(v), func(t *testing.T) {
			d := devtest.Open(t, vk.Options{Matmul: v})
			var checks []func()
			for i, c := range mmEpilogueCases() {
				checks = append(checks, mmStartWith(t, d, c, mmRandom(c, uint64(500+i)), run))
			}
			for _, check := range checks {
				check()
			}
			mmBF16Rounding(t, d, run)
		})
	}
	if d.Tier() >= vk.TierStorage16 {
		t.Run("coop-emu", func(t *testing.T) {
			coop := func(a, b *tensor.Tensor, o tensor.MatMulOpts) *tensor.Tensor {
				return tensor.MatMulCoop(a, b, o, "emu-small")
			}
			var checks []func()
			for i, c := range mmEpilogueCases() {
				if c.da == mmF16 && c.db == mmF16 {
					checks = append(checks, mmStartWith(t, d, c, mmRandom(c, uint64(500+i)), coop))
				}
			}
			for _, check := range checks {
				check()
			}
		})
	}
}

// mmBF16Rounding runs out = 0·0 + 1·C with C fp32 or bf16 values whose bf16
// rounding is known, and compares the result's bits.
func mmBF16Rounding(t *testing.T, d *vk.Device, run mmRun) {
	t.Helper()
	inf := float32(math.Inf(1))
	for _, dc := range []tensor.DType{mmF32, mmBF16} {
		c := []float32{
			1 + 0x1p-8, 1 + 3*0x1p-8, -(1 + 0x1p-8 + 0x1p-20), // ties to even, and past a tie
			// Overflow to inf (past bf16's largest, and its tie with 2^128),
			// and bf16's largest.
			math.MaxFloat32, math.Float32frombits(0xFF7F8000), math.Float32frombits(0x7F7F0000),
			inf, -inf, float32(math.NaN()), 1e-30, 1.5, -2.75,
		}
		n := len(c)
		if dc == mmBF16 {
			c = mmRoundAll(c, mmBF16)
		}
		zero := make([]float32, n)
		o := tensor.MatMulOpts{Beta: 1, C: mmUpload(t, d, c, dc, 1, n), Out: mmBF16}
		out := run(mmUpload(t, d, zero[:1], mmF32, 1, 1), mmUpload(t, d, zero, mmF32, 1, n), o)
		t.Cleanup(out.Release)
		got, err := out.BFloat16Bits()
		require.NoError(t, err)
		for i, v := range c {
			want := mmBF16Bits(v)
			if w := mmBF16Value(want); w != w { // any quiet NaN
				require.True(t, got[i]&0x7FC0 == 0x7FC0, "C %s [%d] = %g: got %#04x, want a quiet NaN", dc, i, v, got[i])
				continue
			}
			require.Equal(t, want, got[i], "C %s [%d] = %g: got %#04x, want %#04x", dc, i, v, got[i], want)
		}
	}
}

// TestMatMulOperandDTypes checks that an A or B MatMul cannot load (int32)
// panics with a *DTypeError, as does a C, bias or result dtype outside
// fp32, fp16 and bf16.
func TestMatMulOperandDTypes(t *testing.T) {
	d := devtest.Open(t)
	f := mmUpload(t, d, make([]float32, 6), mmF32, 2, 3)
	i32 := tensor.FromInt32(d, make([]int32, 6), 2, 3)
	t.Cleanup(i32.Release)
	i32T := tensor.FromInt32(d, make([]int32, 6), 3, 2)
	t.Cleanup(i32T.Release)
	unknown := tensor.DType(200)
	for name, call := range map[string]func(){
		"int32 A":     func() { tensor.MatMul(i32, f, tensor.MatMulOpts{TransB: true}) },
		"int32 B":     func() { tensor.MatMul(f, i32T, tensor.MatMulOpts{}) },
		"unknown out": func() { tensor.MatMul(f, f, tensor.MatMulOpts{TransB: true, Out: unknown}) },
	} {
		func() {
			defer func() {
				r := recover()
				e, ok := r.(*tensor.DTypeError)
				require.True(t, ok, "%s: panic %T (%v), want *tensor.DTypeError", name, r, r)
				require.Equal(t, "MatMul", e.Op, name)
			}()
			call()
		}()
	}
}
