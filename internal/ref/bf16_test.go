package ref_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
)

// TestF32ToBF16 checks named cases bit for bit: ties to even both ways, the
// values next to ties, overflow, subnormals, zeros, infinities and NaNs.
func TestF32ToBF16(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3F800000, 0x3F80}, // 1
		{0x00000000, 0x0000}, // +0
		{0x80000000, 0x8000}, // -0
		{0x3F808000, 0x3F80}, // 1 + 2^-8: a tie, down to even
		{0x3F818000, 0x3F82}, // 1 + 3*2^-8: a tie, up to even
		{0x3F807FFF, 0x3F80}, // just below a tie
		{0x3F808001, 0x3F81}, // just above a tie
		{0xBF808001, 0xBF81}, // negative rounds by magnitude
		{0x7F7F7FFF, 0x7F7F}, // largest finite that stays finite
		{0x7F7F8000, 0x7F80}, // a tie above the largest bf16: inf
		{0x7F7FFFFF, 0x7F80}, // largest fp32: inf
		{0xFF7F8000, 0xFF80}, // -inf
		{0x7F800000, 0x7F80}, // +inf
		{0xFF800000, 0xFF80}, // -inf
		{0x00000001, 0x0000}, // smallest subnormal: to zero
		{0x00008000, 0x0000}, // subnormal tie, down to even zero
		{0x00018000, 0x0002}, // subnormal tie, up to even
		{0x00010000, 0x0001}, // smallest bf16 subnormal, exact
		{0x007F8000, 0x0080}, // largest subnormal tie carries to the smallest normal
		{0x7FC00000, 0x7FC0}, // quiet NaN
		{0xFFC00000, 0xFFC0}, // negative quiet NaN
		{0x7F800001, 0x7FC0}, // signalling NaN, payload below bf16: quieted, stays NaN
		{0x7F810000, 0x7FC1}, // signalling NaN with a payload bf16 holds
		{0xFFA5A5A5, 0xFFE5}, // negative signalling NaN: sign and top payload kept
		{0x7FFFFFFF, 0x7FFF}, // all-ones NaN: no carry into the sign
	}
	for i, c := range cases {
		got := ref.F32ToBF16(math.Float32frombits(c.in))
		require.Equalf(t, c.want, got, "case %d: %#08x -> %#04x, want %#04x", i, c.in, got, c.want)
	}
}

// TestBF16RoundTrip widens every bf16 value and rounds it back: numbers and
// quiet NaNs come back unchanged, signalling NaNs quiet.
func TestBF16RoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		b := uint16(h)
		f := ref.BF16ToF32(b)
		require.Equal(t, uint32(b)<<16, math.Float32bits(f))
		want := b
		if b&0x7FFF > 0x7F80 {
			want |= 0x0040
		}
		require.Equalf(t, want, ref.F32ToBF16(f), "bf16 %#04x", b)
	}
}

// FuzzF32ToBF16 checks that F32ToBF16 gives the nearest bf16, ties to even,
// against float64 distances to the two candidates: an independent statement
// of round to nearest even.
func FuzzF32ToBF16(f *testing.F) {
	for _, x := range []uint32{0, 0x80000000, 0x3F808000, 0x3F818000, 0x7F7F8000, 0x7F7F7FFF, 0x00008000, 0x007FFFFF, 0x7FC00000} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x uint32) {
		v := math.Float32frombits(x)
		got := ref.F32ToBF16(v)
		if math.IsNaN(float64(v)) {
			require.True(t, math.IsNaN(float64(ref.BF16ToF32(got))), "%#08x: NaN gave %#04x", x, got)
			require.Equal(t, uint16(x>>16)|0x0040, got)
			return
		}
		lo := uint16(x >> 16) // truncation; the other candidate is lo+1 in magnitude
		d := func(h uint16) float64 {
			w := float64(ref.BF16ToF32(h))
			if math.IsInf(w, 0) { // beyond the range: inf is "2^128" away
				w = math.Copysign(0x1p128, w)
			}
			return math.Abs(float64(v) - w)
		}
		want := lo
		if dl, dh := d(lo), d(lo+1); dh < dl || (dh == dl && lo&1 == 1) {
			want = lo + 1
		}
		require.Equalf(t, want, got, "%#08x (%g)", x, v)
	})
}

// TestI32Conversions checks the int32 references on extremes, ties and
// saturation.
func TestI32Conversions(t *testing.T) {
	require.Equal(t, int32(0), ref.F32ToI32(float32(math.NaN())))
	require.Equal(t, int32(math.MaxInt32), ref.F32ToI32(0x1p31))
	require.Equal(t, int32(math.MinInt32), ref.F32ToI32(-0x1p31))
	require.Equal(t, int32(math.MinInt32), ref.F32ToI32(float32(math.Inf(-1))))
	require.Equal(t, int32(-2), ref.F32ToI32(-2.9))
	require.Equal(t, int32(2147483520), ref.F32ToI32(2147483520))
	require.Equal(t, float32(16777216), ref.I32ToFloat(16777217, tensor.Float32)) // tie to even
	require.Equal(t, float32(16777220), ref.I32ToFloat(16777219, tensor.Float32)) // tie to even, up
	require.Equal(t, float32(-0x1p31), ref.I32ToFloat(math.MinInt32, tensor.BFloat16))
	require.Equal(t, float32(0x1p31), ref.I32ToFloat(math.MaxInt32, tensor.Float32))
	require.Equal(t, float32(256), ref.I32ToFloat(257, tensor.BFloat16)) // tie to even
	require.Equal(t, float32(260), ref.I32ToFloat(259, tensor.BFloat16)) // tie to even, up
	// 0x0102FFFF = 2^24 + 3*2^16 - 1, just below the bf16 tie 2^24 + 3*2^16:
	// it rounds down to 2^24 + 2^17. Rounding to fp32 first would land on
	// the tie, which then goes up to even, 2^24 + 2^18.
	require.Equal(t, float32(0x1p24+0x1p17), ref.I32ToFloat(0x0102FFFF, tensor.BFloat16))
	require.Equal(t, float32(65504), ref.I32ToFloat(65519, tensor.Float16))
	require.True(t, math.IsInf(float64(ref.I32ToFloat(65520, tensor.Float16)), 1))
	require.True(t, math.IsInf(float64(ref.I32ToFloat(-70000, tensor.Float16)), -1))
}
