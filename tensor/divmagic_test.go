package tensor

import (
	"math/rand/v2"
	"testing"
)

// divByMagic is div_by in Go: the shaders' formula.
func divByMagic(n, m, s uint32) uint32 {
	hi := uint32((uint64(n) * uint64(m)) >> 32)
	return (hi + n) >> s
}

// TestDivMagic checks the shaders' division against Go's for divisors up to
// 2^16 and beyond, with numerators at the ends of the range and at every
// multiple's neighbours, where a multiplier one too small fails.
func TestDivMagic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	divisors := []uint32{1, 2, 3, 5, 6, 7, 9, 24, 25, 576, 641, 1<<31 - 1, 1 << 31}
	for d := uint32(1); d <= 1<<16; d++ {
		if d < 1024 || rng.IntN(64) == 0 {
			divisors = append(divisors, d)
		}
	}
	for range 1000 {
		divisors = append(divisors, rng.Uint32N(1<<31)+1)
	}
	const top = 1<<31 - 1
	for _, d := range divisors {
		m, s := divMagic(d)
		ns := []uint32{0, 1, top, top - 1, d - 1, d, d + 1}
		for range 64 {
			ns = append(ns, rng.Uint32N(top+1))
			if q := rng.Uint32N(top/d + 1); q*d <= top {
				ns = append(ns, q*d, q*d-1, min(q*d+d-1, top))
			}
		}
		for _, n := range ns {
			if n > top {
				continue
			}
			if got, want := divByMagic(n, m, s), n/d; got != want {
				t.Fatalf("%d / %d: got %d, want %d (m %#x, s %d)", n, d, got, want, m, s)
			}
		}
	}
}
