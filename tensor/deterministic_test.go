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
// multiply-add bit for bit (correctly rounded, subnormals flushed), exp,
// ln, tanh, sigmoid and erf within 3 or 4 ulp of float64's, 1/sqrt within
// 1 (two roundings), and pow within 4 ulp plus 3 per unit of |p ln|x||
// (the exponent's own rounding, as in any fp32 pow through exp and log).
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
	mid := detInputs(rng, n, 24, 4, true) // tanh, sigmoid and erf: the polynomials and past saturation
	base := detInputs(rng, n, 10, 10, true)
	expo := make([]float32, len(base)) // pow's exponents: its special cases, integers and fractions
	for i := range expo {
		switch k := rng.IntN(4); {
		case k == 0:
			expo[i] = []float32{2, 3, -1, -2, 0.5, -0.5, 0, 1}[rng.IntN(8)]
		case k == 1:
			expo[i] = float32(rng.IntN(11) - 5)
		default:
			expo[i] = float32(6*rng.Float64() - 3)
		}
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
		ulps    float64                    // 0: bit for bit
		slack   func(x, y float32) float64 // more ulps, for pow
	}{
		{"div", 0, a, b, c, func(x, y, _ float32) float32 { return ftz(x / y) }, 0, nil},
		{"sqrt", 1, pos, b, c, func(x, _, _ float32) float32 { return float32(math.Sqrt(float64(x))) }, 0, nil},
		{"mad", 4, a, b, c, func(x, y, z float32) float32 { return ftz(ftz(float32(x*y)) + z) }, 0, nil},
		{"exp", 2, small, b, c, func(x, _, _ float32) float32 { return ftz(float32(math.Exp(float64(x)))) }, 3, nil},
		{"log", 3, pos, b, c, func(x, _, _ float32) float32 { return float32(math.Log(float64(x))) }, 3, nil},
		{"tanh", 5, mid, b, c, func(x, _, _ float32) float32 { return float32(math.Tanh(float64(x))) }, 4, nil},
		{"sigmoid", 6, small, b, c, func(x, _, _ float32) float32 { return ftz(float32(1 / (1 + math.Exp(-float64(x))))) }, 4, nil},
		{"rsqrt", 7, pos, b, c, func(x, _, _ float32) float32 { return float32(1 / math.Sqrt(float64(x))) }, 1, nil},
		{"erf", 8, mid, b, c, func(x, _, _ float32) float32 { return float32(math.Erf(float64(x))) }, 4, nil},
		{"pow", 9, base, expo, c, powRef, 4, func(x, y float32) float64 { return 3 * math.Abs(float64(y)*math.Log(math.Abs(float64(x)))) }},
	} {
		got := run(k.op, k.a, k.b, k.c)
		bad, worst := 0, 0.0 // worst: the largest error in ulps, beyond pow's slack
		for i, g := range got {
			x, y, z := k.a[i], k.b[i], k.c[i]
			if sub(x) || (k.op == 0 || k.op == 4 || k.op == 9) && (sub(y) || sub(z)) {
				continue // subnormal inputs count as zero; Go's do not
			}
			w := k.want(x, y, z)
			ok := same(g, w)
			if !ok && k.ulps > 0 && !math.IsInf(float64(w), 0) && w != 0 {
				ulp, ulps := math.Abs(float64(w))*0x1p-23, k.ulps
				if k.slack != nil {
					ulps += k.slack(x, y)
				}
				e := math.Abs(float64(g)-float64(w)) / ulp
				ok = e <= ulps
				worst = max(worst, e-ulps+k.ulps)
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
		t.Logf("%s: worst %.2f ulp", k.name, worst)
	}
}

// powRef is PyTorch's pow(tensor, scalar) in float64: exponent 0.5 as sqrt
// and -0.5 as 1/sqrt (so (-inf)^0.5 is NaN and (-0)^-0.5 is -inf), others
// as C's pow, the result flushed as the deterministic mode does.
func powRef(x, p, _ float32) float32 {
	switch p {
	case 0.5:
		return float32(math.Sqrt(float64(x)))
	case -0.5:
		if x == 0 {
			return float32(math.Copysign(math.Inf(1), float64(x)))
		}
		return float32(1 / math.Sqrt(float64(x)))
	}
	return ftz(float32(math.Pow(float64(x), float64(p))))
}
