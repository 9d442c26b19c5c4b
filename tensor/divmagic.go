package tensor

import (
	"fmt"
	"math/bits"
)

// divMagic returns the multiplier and shift with which shaders divide by d
// (shaders/include/divmagic.glsl's div_by): floor(n/d) = (mulhi(n, m) + n)
// >> s for every n < 2^31, Granlund and Montgomery's division by an
// invariant integer, where s = ceil(log2 d) and m = floor(2^32 (2^s - d) /
// d) + 1. CPU drivers have no vector integer division: they divide lane by
// lane, each a scalar division, where this is a multiply, an add and a
// shift. d must be in [1, 2^31] (a shift of 32 is undefined in GLSL): any
// other d is a bug in the caller, and panics.
func divMagic(d uint32) (m, s uint32) {
	if d == 0 || d > 1<<31 {
		panic(fmt.Sprintf("tensor: divMagic(%d): the divisor must be in [1, 2^31]", d))
	}
	s = uint32(bits.Len32(d - 1)) // ceil(log2 d); 0 for d = 1
	m = uint32((uint64(1)<<32)*((uint64(1)<<s)-uint64(d))/uint64(d)) + 1
	return m, s
}
