package tensor_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// pytorchScale is PyTorch's _amp_update_scale_ arithmetic: the float scale
// times a double factor, in double, rounded to float.
func pytorchScale(s float32, f float64) float32 { return float32(float64(s) * f) }

// ampScales are scales across the float range: powers of two, the values
// near them, random bits of every exponent, subnormals and the extremes.
func ampScales(rng *rand.Rand) []float32 {
	var out []float32
	for e := -149; e <= 127; e += 7 {
		p := float32(math.Ldexp(1, e))
		out = append(out, p, math.Nextafter32(p, 0), math.Nextafter32(p, math.MaxFloat32))
	}
	for range 150 {
		b := rng.Uint32() & 0x7FFFFFFF
		if b >= 0x7F800000 {
			b &= 0x7F7FFFFF
		}
		if b == 0 {
			b = 1
		}
		out = append(out, math.Float32frombits(b))
	}
	for range 30 {
		out = append(out, math.Float32frombits(1+rng.Uint32()%0x7FFFFF)) // subnormal
	}
	return append(out, 65536, 1, math.MaxFloat32, math.SmallestNonzeroFloat32, 0x1p-126)
}

// TestLossScaleUpdateExact: every growth and backoff gives PyTorch's bits
// on every driver, the double rounding and subnormal scales included, and
// the reciprocal that Unscale applies is float(1/double(scale)).
// (Unscale's own multiply by a subnormal inv_scale, for scales over 2^126,
// still flushes on SwiftShader.)
func TestLossScaleUpdateExact(t *testing.T) {
	d := devtest.Open(t)
	ls := tensor.NewLossScale(1, 0)
	defer ls.Close()
	one, _ := opInput(t, d, []float32{1}, tensor.Float32, 1)
	ls.Scale(one).Release()
	inf, _ := opInput(t, d, []float32{float32(math.Inf(1))}, tensor.Float32, 1)
	found := tensor.New(d, tensor.Float32, 1)
	defer found.Release()
	var tab tensor.BlockTable
	defer tab.Close()

	check := func(what string, want float32) {
		t.Helper()
		s, _ := ampState(t, ls)
		require.Equalf(t, math.Float32bits(want), math.Float32bits(float32(s)), "%s: scale %g, want %g", what, s, want)
		inv, err := ls.InvScaleBits()
		require.NoError(t, err)
		wantInv := float32(1 / float64(want))
		require.Equalf(t, math.Float32bits(wantInv), inv, "%s: inv_scale of %g", what, want)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	scales := ampScales(rng)
	for _, f := range []float64{0.5, 0.8, 0.3, 0.1, 0.999, 1.0 / 3, 0.7000000000000001} {
		rule := tensor.ScaleUpdate{Growth: 2, Backoff: f, Interval: 1 << 30}
		for _, s := range scales {
			require.NoError(t, ls.Load(float64(s), 0))
			require.NoError(t, ls.Unscale([]*tensor.Tensor{inf}, found, &tab))
			require.NoError(t, ls.Update(rule))
			check("backoff", pytorchScale(s, f))
		}
	}
	for _, f := range []float64{2, 1.5, 1.0001, 3, 10, 1.1, 65536.5} {
		rule := tensor.ScaleUpdate{Growth: f, Backoff: 0.5, Interval: 1}
		for _, s := range scales {
			require.NoError(t, ls.Load(float64(s), 0))
			require.NoError(t, ls.Update(rule))
			want := pytorchScale(s, f)
			if math.IsInf(float64(want), 0) {
				want = s // never grown to inf
			}
			check("growth", want)
		}
	}
}

// TestLossScaleBackoffScenarios: the cases. Two backoffs of 0.8 from
// 65536 give PyTorch's 41943.0390625 (not 41943.04296875, the product with
// an fp32-rounded factor), and halvings from 1 reach 2^-127, 2^-149 and then
// 0 on every driver, as PyTorch's rule does (SwiftShader's float arithmetic
// would flush them).
func TestLossScaleBackoffScenarios(t *testing.T) {
	d := devtest.Open(t)
	inf, _ := opInput(t, d, []float32{float32(math.Inf(1))}, tensor.Float32, 1)
	found := tensor.New(d, tensor.Float32, 1)
	defer found.Release()
	var tab tensor.BlockTable
	defer tab.Close()
	backoffs := func(start float64, f float64, n int) float64 {
		t.Helper()
		ls := tensor.NewLossScale(start, 0)
		defer ls.Close()
		ls.Scale(inf).Release()
		for range n {
			require.NoError(t, ls.Unscale([]*tensor.Tensor{inf}, found, &tab))
			require.NoError(t, ls.Update(tensor.ScaleUpdate{Growth: 2, Backoff: f, Interval: 2000}))
		}
		s, _ := ampState(t, ls)
		return s
	}
	require.Equal(t, 41943.0390625, backoffs(65536, 0.8, 2))
	require.Equal(t, math.Ldexp(1, -127), backoffs(1, 0.5, 127))
	require.Equal(t, math.Ldexp(1, -149), backoffs(1, 0.5, 149))
	require.Equal(t, 0.0, backoffs(1, 0.5, 150))
}
