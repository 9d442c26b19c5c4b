package tensor_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// detTinyMul is the deterministic mode's product: the inputs flushed, the
// product rounded to 24 bits as if the exponent had no lower bound, and
// zero of its sign when that lies below 2^-126 (x86's flush, tininess after
// rounding). float64 holds the exact product of two float32s.
func detTinyMul(a, b float32) float32 {
	p := float64(ftz(a)) * float64(ftz(b))
	if math.Abs(p) >= 0x1p-63 || p != p {
		return float32(p)
	}
	s := float32(p * 0x1p64)
	if math.Abs(float64(s)) < 0x1p-62 {
		return float32(math.Copysign(0, p))
	}
	return float32(float64(s) * 0x1p-64)
}

// detTinyInputs returns a and b (n random pairs, then the edge cases) whose
// sums, differences and products are often subnormal, or normal only
// through a subnormal input.
func detTinyInputs(n int) (a, b []float32) {
	rng := rand.New(rand.NewPCG(90, 91))
	signed := func(x float64) float32 {
		if rng.IntN(2) == 0 {
			x = -x
		}
		return float32(x)
	}
	for range n {
		switch rng.IntN(3) {
		case 0: // products of 2^-70..2^-56: subnormal, near 2^-126 or normal
			a = append(a, signed((1+rng.Float64())*math.Ldexp(1, rng.IntN(14)-70)))
			b = append(b, signed((1+rng.Float64())*math.Ldexp(1, rng.IntN(14)-70)))
		case 1: // sums near 2^-126 (either may be subnormal)
			a = append(a, signed((1+rng.Float64())*math.Ldexp(1, rng.IntN(6)-130)))
			b = append(b, signed((1+rng.Float64())*math.Ldexp(1, rng.IntN(6)-130)))
		default: // a subnormal times or plus a normal number
			a = append(a, signed(rng.Float64()*0x1p-126))
			b = append(b, signed((1+rng.Float64())*math.Ldexp(1, rng.IntN(60)-10)))
		}
	}
	tiny := math.Float32frombits(0x00800000) // 2^-126
	inf := float32(math.Inf(1))
	edge := [][2]float32{
		{1e-38, 0.5}, {1.5e-38, 1.4e-38}, {1.5e-38, -1.4e-38}, // subnormal results
		{1e-39, 1.2e-38}, {-1e-39, 0}, {1e-39, 0x1p30}, {1e-39, -1}, // subnormal inputs
		// 2^-126 - 2^-150: 2^-126 rounded to a subnormal, 0 rounded first.
		{math.Float32frombits(0x3F7FFFFF), tiny}, {-math.Float32frombits(0x3F7FFFFF), tiny},
		{math.Float32frombits(0x3F7FFFFF) * 0x1p-60, tiny * 0x1p60}, {0x1p-63, 0x1p-63}, {3, 0x1p-127},
		{0, -1}, {float32(math.Copysign(0, -1)), 0}, {inf, 1e-39}, {-inf, 1e-39}, {float32(math.NaN()), 1},
		{3e38, 3e38}, {1, 2},
	}
	for _, e := range edge {
		a, b = append(a, e[0]), append(b, e[1])
	}
	return a, b
}

// TestDeterministicSubnormals checks add, sub and mul in deterministic mode
// (the plain kernels, their texel forms on lavapipe, the broadcasting ones)
// bit for bit against Go on inputs that make subnormals: drivers differ
// there (SwiftShader flushes subnormal inputs and results, lavapipe keeps
// them), the deterministic mode flushes both.
func TestDeterministicSubnormals(t *testing.T) {
	d := devtest.Open(t, vk.Options{Deterministic: true})
	const cols = 37
	a, b := detTinyInputs(40 * cols)
	for len(a)%cols != 0 { // whole rows for the broadcast
		a, b = append(a, 1), append(b, 1)
	}
	rows := len(a) / cols
	ta, tb := tensor.FromFloat32(d, a, rows, cols), tensor.FromFloat32(d, b, rows, cols)
	brow := tensor.FromFloat32(d, b[:cols], 1, cols)
	defer ta.Release()
	defer tb.Release()
	defer brow.Release()
	for _, k := range []struct {
		name string
		dev  func(a, b *tensor.Tensor, out tensor.DType) *tensor.Tensor
		want func(x, y float32) float32
	}{
		{"Add", tensor.Add, func(x, y float32) float32 { return ftz(ftz(x) + ftz(y)) }},
		{"Sub", tensor.Sub, func(x, y float32) float32 { return ftz(ftz(x) - ftz(y)) }},
		{"Mul", tensor.Mul, detTinyMul},
	} {
		for _, bc := range []bool{false, true} {
			name, tb2 := k.name, tb
			if bc {
				name, tb2 = name+"/broadcast", brow
			}
			out := k.dev(ta, tb2, tensor.Float32)
			got, err := out.Float32s()
			out.Release()
			if err != nil {
				t.Fatal(name, err)
			}
			bad := 0
			for i, g := range got {
				x, y := a[i], b[i]
				if bc {
					y = b[i%cols]
				}
				w := k.want(x, y)
				if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
					if bad++; bad <= 5 {
						t.Errorf("%s(%g (%#08x), %g (%#08x)) = %g (%#08x), want %g (%#08x)", name, x, math.Float32bits(x),
							y, math.Float32bits(y), g, math.Float32bits(g), w, math.Float32bits(w))
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d wrong", name, bad, len(got))
			}
		}
	}
}

// TestDeterministicClampValues checks ClampValues (grad_clamp) in
// deterministic mode bit for bit against Go where drivers differ: the
// comparisons of subnormal values (SwiftShader's are of zero), with clip 0
// and clip subnormal. Both are flushed for the comparison; an element kept
// keeps its bits, one clamped gets the flushed clip of its side's sign.
func TestDeterministicClampValues(t *testing.T) {
	d := devtest.Open(t, vk.Options{Deterministic: true})
	rng := rand.New(rand.NewPCG(92, 93))
	inf := float32(math.Inf(1))
	var v []float32
	for range 2000 {
		x := rng.Float64() * 0x1p-126 // subnormal
		if rng.IntN(3) == 0 {
			x = (1 + rng.Float64()) * math.Ldexp(1, rng.IntN(20)-135) // around 2^-126 and the clips
		}
		if rng.IntN(2) == 0 {
			x = -x
		}
		v = append(v, float32(x))
	}
	v = append(v, 0, float32(math.Copysign(0, -1)), 1, -1, inf, -inf, float32(math.NaN()), 3e38, -3e38)
	var tab tensor.BlockTable
	defer tab.Close()
	for _, clip := range []float32{0, 1e-39, 0x1p-126, 1.5e-38, 0.5, inf} {
		c := ftz(clip)
		x := tensor.FromFloat32(d, v, len(v))
		err := tensor.ClampValues([]*tensor.Tensor{x}, clip, &tab)
		if err != nil {
			t.Fatal(err)
		}
		got, err := x.Float32s()
		x.Release()
		if err != nil {
			t.Fatal(err)
		}
		bad := 0
		for i, g := range got {
			w, f := v[i], ftz(v[i])
			switch {
			case math.IsInf(float64(w), 0) || w != w:
			case f > c:
				w = c
			case f < -c:
				w = -c
			}
			if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
				if bad++; bad <= 5 {
					t.Errorf("clip %g: %g (%#08x) became %g (%#08x), want %g (%#08x)", clip, v[i], math.Float32bits(v[i]),
						g, math.Float32bits(g), w, math.Float32bits(w))
				}
			}
		}
		if bad > 0 {
			t.Errorf("clip %g: %d of %d wrong", clip, bad, len(got))
		}
	}
}
