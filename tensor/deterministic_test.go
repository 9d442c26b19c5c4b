package tensor_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// ftz is the deterministic mode's flush: a subnormal becomes zero of its sign.
func ftz(x float32) float32 {
	if b := math.Float32bits(x); b&0x7F800000 == 0 {
		return math.Float32frombits(b & 0x80000000)
	}
	return x
}

// detInputs returns n normal floats with exponents in [-lo, hi), random
// signs if signed, then the specials.
func detInputs(rng *rand.Rand, n, lo, hi int, signed bool) []float32 {
	v := make([]float32, n)
	for i := range v {
		x := float32(1+rng.Float64()) * float32(math.Ldexp(1, rng.IntN(hi+lo)-lo))
		if signed && rng.IntN(2) == 0 {
			x = -x
		}
		v[i] = x
	}
	inf := float32(math.Inf(1))
	return append(v, 0, float32(math.Copysign(0, -1)), inf, -inf, float32(math.NaN()), 1, 3e38, 1e-37, 1.5e-45)
}

// TestDeterministicMath checks the deterministic mode's arithmetic
// (shaders/include/det.glsl) against Go: division, sqrt and the unfused
// multiply-add bit for bit (correctly rounded, subnormals flushed), exp and
// ln within 3 ulp of float64's.
func TestDeterministicMath(t *testing.T) {
	d := devtest.Open(t, vk.Options{Deterministic: true})
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 4000
	a := detInputs(rng, n, 70, 70, true)
	b := detInputs(rng, n, 70, 70, true)
	c := detInputs(rng, n, 130, 0, true) // small addends: sums that cancel to subnormals
	b[n+1], b[n+2] = 2, 0.5              // -0 / 2, inf / 0.5
	pos := detInputs(rng, n, 126, 127, false)
	small := detInputs(rng, n, 7, 7, true) // exp's range and past it
	for i := range small {
		small[i] *= 1.4
	}
	run := func(op uint32, a, b, c []float32) []float32 {
		ta, tb, tc := tensor.FromFloat32(d, a, len(a)), tensor.FromFloat32(d, b, len(a)), tensor.FromFloat32(d, c, len(a))
		defer ta.Release()
		defer tb.Release()
		defer tc.Release()
		out := tensor.DetMath(op, ta, tb, tc)
		defer out.Release()
		v, err := out.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	sub := func(x float32) bool { return x != 0 && math.Float32bits(x)&0x7F800000 == 0 }
	same := func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) || x != x && y != y }
	for _, k := range []struct {
		name    string
		op      uint32
		a, b, c []float32
		want    func(x, y, z float32) float32
		ulps    float64 // 0: bit for bit
	}{
		{"div", 0, a, b, c, func(x, y, _ float32) float32 { return ftz(x / y) }, 0},
		{"sqrt", 1, pos, b, c, func(x, _, _ float32) float32 { return float32(math.Sqrt(float64(x))) }, 0},
		{"mad", 4, a, b, c, func(x, y, z float32) float32 { return ftz(ftz(float32(x*y)) + z) }, 0},
		{"exp", 2, small, b, c, func(x, _, _ float32) float32 { return ftz(float32(math.Exp(float64(x)))) }, 3},
		{"log", 3, pos, b, c, func(x, _, _ float32) float32 { return float32(math.Log(float64(x))) }, 3},
	} {
		got := run(k.op, k.a, k.b, k.c)
		bad := 0
		for i, g := range got {
			x, y, z := k.a[i], k.b[i], k.c[i]
			if sub(x) || (k.op == 0 || k.op == 4) && (sub(y) || sub(z)) {
				continue // subnormal inputs count as zero; Go's do not
			}
			w := k.want(x, y, z)
			ok := same(g, w)
			if !ok && k.ulps > 0 && !math.IsInf(float64(w), 0) && w != 0 {
				ulp := math.Abs(float64(w)) * 0x1p-23
				ok = math.Abs(float64(g)-float64(w)) <= k.ulps*ulp
			}
			if !ok && k.ulps > 0 && w == 0 { // exp's flush: results below 2^-126 may be 0 or tiny
				ok = math.Abs(float64(g)) < 0x1p-125
			}
			if !ok {
				if bad++; bad <= 5 {
					t.Errorf("%s(%g, %g, %g) = %g (%#08x), want %g (%#08x)", k.name, x, y, z, g, math.Float32bits(g), w, math.Float32bits(w))
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d wrong", k.name, bad, len(got))
		}
	}
}
