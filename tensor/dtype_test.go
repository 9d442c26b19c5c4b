package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// dtAll are the four dtypes.
var dtAll = []tensor.DType{tensor.Float32, tensor.Float16, tensor.BFloat16, tensor.Int32}

func TestDTypeNames(t *testing.T) {
	for i, want := range []string{"float32", "float16", "bfloat16", "int32", "DType(4)"} {
		require.Equal(t, want, tensor.DType(i).String())
	}
	for i, want := range []int{4, 2, 2, 4, 0} {
		require.Equal(t, want, tensor.DType(i).Size(), "Size of %s", tensor.DType(i))
	}
}

// TestWidest checks PyTorch's promotion, f16 with bf16 giving f32, and the
// panics for what does not promote.
func TestWidest(t *testing.T) {
	f32, f16, bf16 := tensor.Float32, tensor.Float16, tensor.BFloat16
	cases := []struct {
		in   []tensor.DType
		want tensor.DType
	}{
		{[]tensor.DType{f16}, f16},
		{[]tensor.DType{bf16, bf16}, bf16},
		{[]tensor.DType{f16, f32}, f32},
		{[]tensor.DType{bf16, f32, bf16}, f32},
		{[]tensor.DType{f16, bf16}, f32},
		{[]tensor.DType{bf16, f16, f16}, f32},
	}
	for i, c := range cases {
		require.Equal(t, c.want, tensor.Widest(c.in...), "case %d: %v", i, c.in)
	}
	opPanics[*tensor.DTypeError](t, "Widest int32", func() { tensor.Widest(f16, tensor.Int32) }, "Widest", "int32")
	opPanics[*tensor.DTypeError](t, "Widest DType(7)", func() { tensor.Widest(tensor.DType(7)) }, "Widest", "DType(7)")
	opPanics[*tensor.UsageError](t, "Widest()", func() { tensor.Widest() }, "Widest", "no dtypes")
}

// TestDTypeStorage makes, fills, uploads and reads tensors of every dtype,
// with odd lengths so that 16-bit tensors end in half a word.
func TestDTypeStorage(t *testing.T) {
	d := devtest.Open(t)
	for _, dt := range dtAll {
		for _, n := range []int{1, 7, 1000} {
			x := castKeep(t, tensor.Full(d, dt, -2.75, n))
			want := float32(-2.75)
			if dt == tensor.Int32 {
				want = -2
			}
			v := opRead(t, x)
			require.Len(t, v, n)
			for i := range v {
				require.Equal(t, want, v[i], "Full(%s, -2.75)[%d]", dt, i)
			}
			z := opRead(t, castKeep(t, tensor.Zeros(d, dt, n)))
			require.Equal(t, make([]float32, n), z, "Zeros(%s)", dt)
		}
	}
	fills := []struct {
		dt   tensor.DType
		v    float32
		want float32
	}{
		{tensor.BFloat16, 1 + 0x1p-8, 1},            // a tie, to even
		{tensor.BFloat16, 1 + 3*0x1p-8, 1 + 0x1p-6}, // a tie, to even, up
		{tensor.Float16, 1 + 0x1p-11, 1},            // a tie, to even
		{tensor.BFloat16, math.MaxFloat32, float32(math.Inf(1))},
		{tensor.Int32, float32(math.NaN()), 0},
		{tensor.Int32, 1e10, math.MaxInt32},
		{tensor.Int32, -1e10, math.MinInt32},
		{tensor.Int32, -0.9, 0},
	}
	for i, c := range fills {
		x := castKeep(t, tensor.Full(d, c.dt, c.v, 3))
		require.Equal(t, []float32{c.want, c.want, c.want}, opRead(t, x), "case %d: Full(%s, %g)", i, c.dt, c.v)
	}
	bits := []uint16{0x3F80, 0xC040, 0x0001, 0x7F80, 0xFF81, 0x8000, 0x7FC1}
	b := castKeep(t, tensor.FromBFloat16(d, bits, 7))
	got, err := b.BFloat16Bits()
	require.NoError(t, err)
	require.Equal(t, bits, got, "bf16 upload and download")
	v := opRead(t, b)
	for i, h := range bits {
		require.Equal(t, uint32(h)<<16, math.Float32bits(v[i]), "Float32s of bf16 %#04x", h)
	}
	opPanics[*tensor.DTypeError](t, "New DType(4)", func() { tensor.New(d, tensor.DType(4), 2) }, "New", "DType(4)")
	opPanics[*tensor.DTypeError](t, "Int32s of bf16", func() { _, _ = b.Int32s() }, "Int32s", "bfloat16")
	opPanics[*tensor.DTypeError](t, "BFloat16Bits of f16", func() {
		_, _ = castKeep(t, tensor.Zeros(d, tensor.Float16, 1)).BFloat16Bits()
	}, "BFloat16Bits", "float16")
	opPanics[*tensor.DTypeError](t, "Float16s of bf16", func() { _, _ = b.Float16s() }, "Float16s", "bfloat16")
	opPanics[*tensor.ShapeError](t, "FromInt32 length", func() { tensor.FromInt32(d, []int32{1, 2}, 3) }, "FromInt32", "[3]", "[2]")
	opPanics[*tensor.ShapeError](t, "FromBFloat16 length", func() { tensor.FromBFloat16(d, bits, 2, 2) }, "FromBFloat16", "[2 2]", "[7]")
}

// dtUpload uploads v, whose values dt holds exactly, as a tensor of dt.
func dtUpload(t testing.TB, d *vk.Device, dt tensor.DType, v []float32) *tensor.Tensor {
	t.Helper()
	switch dt {
	case tensor.Int32:
		iv := make([]int32, len(v))
		for i, x := range v {
			iv[i] = int32(x)
		}
		return castKeep(t, tensor.FromInt32(d, iv, len(v)))
	case tensor.Float32:
		return castKeep(t, tensor.FromFloat32(d, v, len(v)))
	}
	x, _ := opInput(t, d, v, dt, len(v))
	return x
}

// dtHeld returns v as dt holds it: rounded, or for Int32 truncated and
// reduced below 2^24 in magnitude, so that float32 holds it exactly.
func dtHeld(v []float32, dt tensor.DType) []float32 {
	if dt != tensor.Int32 {
		return ref.RoundAll(v, dt)
	}
	h := make([]float32, len(v))
	for i, x := range v {
		h[i] = float32(ref.F32ToI32(x) % (1 << 24))
	}
	return h
}

// dtConvert is the reference of Cast from dtype from to dtype to, for a
// value from holds exactly, as a float32 (exact for every result but
// Int32s beyond 2^24, which the test's values avoid).
func dtConvert(v float32, from, to tensor.DType) float32 {
	switch {
	case to == tensor.Int32:
		return float32(ref.F32ToI32(v))
	case from == tensor.Int32:
		return ref.I32ToFloat(int32(v), to)
	case to == tensor.Float32:
		return v
	case to == tensor.Float16:
		return float16.Frombits(ref.Bits16(v, to)).Float32()
	}
	return ref.BF16ToF32(ref.F32ToBF16(v))
}

// TestCastPairs casts between every two dtypes, odd and even lengths, so
// that each pair's kernel and the half-word ends are exercised.
func TestCastPairs(t *testing.T) {
	d := devtest.Open(t)
	base := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 1.5, -2.5, 3.999, 65504, 70000, -1e6, 0.1, 1e-6, 257, 16777217,
		float32(math.Inf(1)), float32(math.NaN()), 6e-8, -123.456, 2049, 1 + 0x1p-8}
	for _, n := range []int{1, len(base) - 1, 1001} {
		v := make([]float32, n)
		for i := range v {
			v[i] = base[i%len(base)]
		}
		for _, from := range dtAll {
			held := dtHeld(v, from)
			x := dtUpload(t, d, from, held)
			for _, to := range dtAll {
				what := fmt.Sprintf("Cast %s -> %s [%d]", from, to, n)
				y := castKeep(t, tensor.Cast(x, to))
				require.Equal(t, to, y.DType(), what)
				got := opRead(t, y)
				for i := range held {
					want := dtConvert(held[i], from, to)
					if math.Float32bits(got[i]) != math.Float32bits(want) && !(want != want && got[i] != got[i]) {
						t.Errorf("%s[%d]: %g -> %g, want %g", what, i, held[i], got[i], want)
					}
				}
			}
		}
	}
	x := castKeep(t, tensor.FromInt32(d, []int32{1, -2, 3, -4, 5, -6}, 2, 3))
	r := castKeep(t, tensor.Reshape(x, 3, 2))
	got, err := r.Int32s()
	require.NoError(t, err)
	require.Equal(t, []int32{1, -2, 3, -4, 5, -6}, got)
	require.Equal(t, []int{3, 2}, r.Shape())
	opPanics[*tensor.DTypeError](t, "Cast DType(9)", func() { tensor.Cast(x, tensor.DType(9)) }, "Cast", "DType(9)")
}
