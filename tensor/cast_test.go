package tensor_test

import (
	"flag"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Cast tests: every conversion bit for bit against a Go reference, through
// tensor.Cast on the test device's tier. Helpers carry a "cast" prefix.

var fullSweep = flag.Bool("vkamp.fullsweep", false, "cast all 2^32 fp32 values to fp16 (minutes)")

// castKeep fails t if x carries an error, and releases x when t ends.
func castKeep(t testing.TB, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	require.NoError(t, x.Err())
	t.Cleanup(x.Release)
	return x
}

// castFromBits uploads fp32 bit patterns.
func castFromBits(t testing.TB, d *vk.Device, in []uint32) *tensor.Tensor {
	t.Helper()
	f := make([]float32, len(in))
	for i, x := range in {
		f[i] = math.Float32frombits(x)
	}
	return castKeep(t, tensor.FromFloat32(d, f, len(f)))
}

// castBits16 casts x to the 16-bit dtype dt and returns the bit patterns.
func castBits16(t testing.TB, x *tensor.Tensor, dt tensor.DType) []uint16 {
	t.Helper()
	y := tensor.Cast(x, dt)
	defer y.Release()
	return readBits16(t, y)
}

// castBits32 casts x to Float32 and returns the bit patterns.
func castBits32(t testing.TB, x *tensor.Tensor) []uint32 {
	t.Helper()
	y := tensor.Cast(x, tensor.Float32)
	defer y.Release()
	return opBits(opRead(t, y))
}

// castCheck16 compares the 16-bit results got of inputs in with want(in[i]).
func castCheck16(t testing.TB, what string, in []uint32, got []uint16, want func(uint32) uint16) {
	t.Helper()
	require.Len(t, got, len(in))
	bad := 0
	for i, x := range in {
		if w := want(x); got[i] != w {
			bad++
			if bad <= 10 {
				t.Errorf("%s: %#08x (%g) -> %#04x, want %#04x", what, x, math.Float32frombits(x), got[i], w)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d conversions differ", what, bad, len(in))
	}
}

func castF16Want(x uint32) uint16  { return float16.Fromfloat32(math.Float32frombits(x)).Bits() }
func castBF16Want(x uint32) uint16 { return ref.F32ToBF16(math.Float32frombits(x)) }

// TestCastAllHalves casts every fp16 value to fp32 and back.
func TestCastAllHalves(t *testing.T) {
	d := devtest.Open(t)
	const n = 1 << 16
	halves := make([]float16.Float16, n)
	for i := range halves {
		halves[i] = float16.Frombits(uint16(i))
	}
	got := castBits32(t, castKeep(t, tensor.FromFloat16(d, halves, n)))
	bad := 0
	for i, g := range got {
		want := math.Float32bits(float16.Frombits(uint16(i)).Float32())
		if g != want && bad < 10 {
			t.Errorf("f16 %#04x -> f32 %#08x, want %#08x", i, g, want)
			bad++
		}
	}
	// NaN payloads survive; a signalling NaN comes back quiet, as IEEE says.
	castCheck16(t, "f16 -> f32 -> f16", got, castBits16(t, castFromBits(t, d, got), tensor.Float16), castF16Want)
}

// castInputs returns fp32 bit patterns that cover every exponent with many
// mantissas, every rounding tie of the fp16 range, the subnormal range and
// the overflow boundary, and special values.
func castInputs() []uint32 {
	var in []uint32
	rng := rand.New(rand.NewPCG(1, 2))
	// A strided sweep of all 2^32 patterns: 2^23 values, every exponent.
	for i := uint32(0); i < 1<<23; i++ {
		in = append(in, i<<9|rng.Uint32()&0x1FF)
	}
	// Every fp32 whose exponent maps into fp16's normal or subnormal range,
	// at the tie, just below and just above it, with random high bits.
	for e := uint32(102); e <= 143; e++ {
		for j := 0; j < 1<<16; j++ {
			hi := rng.Uint32() & 0x7FE000
			sign := rng.Uint32() & 0x80000000
			base := sign | e<<23 | hi
			in = append(in, base|0x1000, base|0x0FFF, base|0x1001)
		}
	}
	// Every subnormal-result input exactly on a tie: m * 2^-25 for odd m.
	for m := uint32(1); m < 1<<11; m += 2 {
		f := float32(m) * float32(math.Ldexp(1, -25))
		in = append(in, math.Float32bits(f), math.Float32bits(-f))
	}
	specials := []float32{0, 65504, 65519.99, 65520, 65536, 1e-8, 5.96e-8, 2.98e-8, 2.9802322e-8, 6.1035156e-05,
		float32(math.Inf(1)), float32(math.Inf(-1)), 1, 1 + 1.0/2048, 1 + 3.0/2048, math.MaxFloat32, math.SmallestNonzeroFloat32}
	for _, f := range specials {
		in = append(in, math.Float32bits(f), math.Float32bits(-f))
		b := math.Float32bits(f)
		in = append(in, b+1, b-1)
	}
	return append(in, castNaNs...)
}

// castNaNs are NaNs with payloads: quiet, signalling, both signs, payloads
// only in bits a 16-bit dtype drops.
var castNaNs = []uint32{0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0xFF800001, 0x7FFFFFFF, 0xFFFFFFFF,
	0x7F802000, 0x7FC01000, 0x7F810000, 0xFFA5A5A5, 0x7F80FFFF}

// TestCastF32ToF16 checks fp32 -> fp16 bit for bit against x448/float16 on
// over 16 million inputs.
func TestCastF32ToF16(t *testing.T) {
	d := devtest.Open(t)
	in := castInputs()
	require.GreaterOrEqual(t, len(in), 16_000_000)
	castCheck16(t, "f32 -> f16", in, castBits16(t, castFromBits(t, d, in), tensor.Float16), castF16Want)
}

// TestCastFullSweep casts all 2^32 fp32 patterns to fp16; it runs only with
// -vkamp.fullsweep.
func TestCastFullSweep(t *testing.T) {
	if !*fullSweep {
		t.Skip("run with -vkamp.fullsweep to cast all 2^32 values")
	}
	d := devtest.Open(t)
	const chunk = 1 << 24
	in := make([]uint32, chunk)
	for base := uint64(0); base < 1<<32; base += chunk {
		for i := range in {
			in[i] = uint32(base) + uint32(i)
		}
		x := castFromBits(t, d, in)
		castCheck16(t, "f32 -> f16", in, castBits16(t, x, tensor.Float16), castF16Want)
		x.Release()
		if t.Failed() {
			return
		}
	}
}

// TestCastBFloat16 checks every bf16 value up to fp32 (exact: a shift, NaN
// payloads and signalling NaNs included), to fp16 and to int32, and fp32 and
// fp16 down to bf16 over ties, their neighbours, overflow, subnormals and
// NaNs.
func TestCastBFloat16(t *testing.T) {
	d := devtest.Open(t)
	all := make([]uint16, 1<<16)
	for i := range all {
		all[i] = uint16(i)
	}
	x := castKeep(t, tensor.FromBFloat16(d, all, len(all)))
	widened := make([]uint32, len(all))
	for i, h := range all {
		widened[i] = uint32(h) << 16
	}
	require.Equal(t, widened, castBits32(t, x), "bf16 -> f32")
	castCheck16(t, "bf16 -> f16", widened, castBits16(t, x, tensor.Float16), castF16Want)
	castCheck16(t, "bf16 -> bf16", widened, castBits16(t, x, tensor.BFloat16), func(w uint32) uint16 { return uint16(w >> 16) })
	ints := tensor.Cast(x, tensor.Int32)
	defer ints.Release()
	got, err := ints.Int32s()
	require.NoError(t, err)
	for i, w := range widened {
		if want := ref.F32ToI32(math.Float32frombits(w)); got[i] != want {
			t.Fatalf("bf16 %#04x -> int32 %d, want %d", i, got[i], want)
		}
	}

	in := castBF16Inputs()
	castCheck16(t, "f32 -> bf16", in, castBits16(t, castFromBits(t, d, in), tensor.BFloat16), castBF16Want)

	halves := make([]float16.Float16, 1<<16)
	hin := make([]uint32, len(halves))
	for i := range halves {
		halves[i] = float16.Frombits(uint16(i))
		hin[i] = math.Float32bits(halves[i].Float32())
	}
	h := castKeep(t, tensor.FromFloat16(d, halves, len(halves)))
	castCheck16(t, "f16 -> bf16", hin, castBits16(t, h, tensor.BFloat16), castBF16Want)
}

// castBF16Inputs returns fp32 patterns around every bf16 rounding boundary:
// for each bf16 value (both parities, every exponent, both signs), the exact
// tie above it, one below and one above the tie, and a random low half;
// then the ties below the smallest subnormal, the largest finite values that
// round to inf or not, zeros, infinities and NaNs with payloads.
func castBF16Inputs() []uint32 {
	rng := rand.New(rand.NewPCG(3, 4))
	var in []uint32
	for h := range uint32(1 << 16) {
		b := h << 16
		in = append(in, b|0x8000, b|0x7FFF, b|0x8001, b|rng.Uint32()&0xFFFF, b)
	}
	for _, s := range []uint32{0, 0x80000000} {
		in = append(in, s|0x00000001, s|0x00008000, s|0x00018000, s|0x007F8000, s|0x007FFFFF,
			s|0x7F7F7FFF, s|0x7F7F8000, s|0x7F7FFFFF, s|0x7F7EFFFF, s|0x7F800000)
	}
	return append(in, castNaNs...)
}

// castInt32s are int32 values around every rounding boundary of fp32, fp16
// and bf16 (ties k<<s for odd k, and their neighbours, both signs), the fp16
// overflow, and the extremes.
func castInt32s() []int32 {
	rng := rand.New(rand.NewPCG(5, 6))
	in := []int32{0, 1, -1, 2, 255, 256, 257, 65504, 65519, 65520, -65520, 1 << 24, 1<<24 + 1, 1<<24 + 3,
		0x0102FFFF, math.MaxInt32, math.MaxInt32 - 1, math.MinInt32, math.MinInt32 + 1, -(1 << 24) - 1}
	for s := range 31 {
		for range 16 {
			k := int64(rng.Uint32()|1) >> (s + 1)
			v := k << s
			for _, w := range []int64{v, v - 1, v + 1, -v, -v - 1, -v + 1} {
				if w >= math.MinInt32 && w <= math.MaxInt32 {
					in = append(in, int32(w))
				}
			}
		}
	}
	return in
}

// TestCastInt32 checks Int32 uploads and downloads, Int32 to every float
// dtype (rounded once, to nearest even) and every float dtype to Int32
// (toward zero, saturating, NaN giving 0).
func TestCastInt32(t *testing.T) {
	d := devtest.Open(t)
	in := castInt32s()
	x := castKeep(t, tensor.FromInt32(d, in, len(in)))
	got, err := x.Int32s()
	require.NoError(t, err)
	require.Equal(t, in, got, "Int32 upload and download")
	f, err := x.Float32s()
	require.NoError(t, err)
	for i, v := range in {
		require.Equal(t, float32(v), f[i], "Float32s of int32 %d", v)
	}
	for _, dt := range opDTypes {
		y := tensor.Cast(x, dt)
		got := opRead(t, y)
		y.Release()
		for i, v := range in {
			if want := ref.I32ToFloat(v, dt); math.Float32bits(got[i]) != math.Float32bits(want) {
				t.Errorf("int32 %d (%#08x) -> %s %g, want %g", v, uint32(v), dt, got[i], want)
			}
		}
	}
	back := tensor.Cast(x, tensor.Int32)
	defer back.Release()
	got, err = back.Int32s()
	require.NoError(t, err)
	require.Equal(t, in, got, "int32 -> int32")

	var fin []uint32 // every eighth of castInputs' sweep: all exponents
	for i := uint32(0); i < 1<<23; i += 8 {
		fin = append(fin, i<<9|i&0x1FF)
	}
	fin = append(fin, castNaNs...)
	for _, v := range []float32{0.5, -0.5, 0.99999994, -1.5, 2.5, 2147483520, -2147483648, 2147483648, 1e10, -1e10} {
		fin = append(fin, math.Float32bits(v))
	}
	got = castToInt32(t, castFromBits(t, d, fin))
	for i, w := range fin {
		if want := ref.F32ToI32(math.Float32frombits(w)); got[i] != want {
			t.Errorf("f32 %#08x (%g) -> int32 %d, want %d", w, math.Float32frombits(w), got[i], want)
		}
	}
	halves := make([]float16.Float16, 1<<16)
	for i := range halves {
		halves[i] = float16.Frombits(uint16(i))
	}
	got = castToInt32(t, castKeep(t, tensor.FromFloat16(d, halves, len(halves))))
	for i, h := range halves {
		if want := ref.F32ToI32(h.Float32()); got[i] != want {
			t.Errorf("f16 %#04x -> int32 %d, want %d", i, got[i], want)
		}
	}
}

func castToInt32(t testing.TB, x *tensor.Tensor) []int32 {
	t.Helper()
	y := tensor.Cast(x, tensor.Int32)
	defer y.Release()
	got, err := y.Int32s()
	require.NoError(t, err)
	return got
}

// TestCastSameDType checks that a cast to the tensor's own dtype is a bit
// for bit copy, made by the driver's buffer copy, except for an odd count of
// 16-bit elements (the copy16 kernel, which zeroes the padding half).
func TestCastSameDType(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{1, 2, 7, 8, 1001, 4096} {
		b16 := make([]uint16, n)
		f32 := make([]float32, n)
		i32 := make([]int32, n)
		for i := range n {
			b16[i] = uint16(rng.Uint32())
			f32[i] = math.Float32frombits(rng.Uint32())
			i32[i] = int32(rng.Uint32())
		}
		f16 := float16s(b16)
		for _, x := range []*tensor.Tensor{
			castKeep(t, tensor.FromFloat32(d, f32, n)), castKeep(t, tensor.FromFloat16(d, f16, n)),
			castKeep(t, tensor.FromBFloat16(d, b16, n)), castKeep(t, tensor.FromInt32(d, i32, n)),
		} {
			before := d.Stats()
			y := castKeep(t, tensor.Cast(x, x.DType()))
			after := d.Stats()
			kernel := x.DType().Size() == 2 && n%2 == 1
			require.Equal(t, kernel, after.Dispatches > before.Dispatches, "%s n=%d: dispatched a kernel", x.DType(), n)
			require.Equal(t, !kernel, after.Copies > before.Copies, "%s n=%d: recorded a buffer copy", x.DType(), n)
			var got, want any
			var err error
			switch x.DType() {
			case tensor.Float32:
				var g []float32
				g, err = y.Float32s()
				gb, wb := make([]uint32, n), make([]uint32, n)
				for i := range n {
					gb[i], wb[i] = math.Float32bits(g[i]), math.Float32bits(f32[i])
				}
				got, want = gb, wb
			case tensor.Float16:
				var g []float16.Float16
				g, err = y.Float16s()
				got, want = g, f16
			case tensor.BFloat16:
				got, err = y.BFloat16Bits()
				want = b16
			case tensor.Int32:
				got, err = y.Int32s()
				want = i32
			}
			require.NoError(t, err)
			require.Equal(t, want, got, "%s n=%d", x.DType(), n)
		}
	}
}

// TestFillDTypes checks Fill in every dtype, made by the driver's buffer
// fill, with the padding half of an odd count of 16-bit elements zero (the
// kernels read whole words).
func TestFillDTypes(t *testing.T) {
	d := devtest.Open(t)
	for _, n := range []int{1, 2, 7, 8, 1001} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float16, tensor.BFloat16, tensor.Int32} {
			x := castKeep(t, tensor.New(d, dt, n))
			raw, err := x.RawBytes()
			require.NoError(t, err)
			for i := range raw {
				raw[i] = 0xA5 // the padding too: the fill must zero it
			}
			x.WriteRawBytes(raw)
			before := d.Stats().Dispatches
			tensor.Fill(x, -2.5)
			require.Equal(t, before, d.Stats().Dispatches, "%s n=%d: Fill dispatched a kernel", dt, n)
			got, err := x.RawBytes()
			require.NoError(t, err)
			var elem []byte
			switch dt {
			case tensor.Float32:
				elem = []byte{0x00, 0x00, 0x20, 0xC0}
			case tensor.Float16:
				elem = []byte{0x00, 0xC1}
			case tensor.BFloat16:
				elem = []byte{0x20, 0xC0}
			case tensor.Int32:
				elem = []byte{0xFE, 0xFF, 0xFF, 0xFF} // toward zero: -2
			}
			want := make([]byte, 0, len(got))
			for range n {
				want = append(want, elem...)
			}
			for len(want) < len(got) {
				want = append(want, 0)
			}
			require.Equal(t, want, got, "%s n=%d", dt, n)
		}
	}
}
