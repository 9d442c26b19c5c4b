package ref

import "math"

// F32ToF16Bits is shaders/include/fp16.glsl's f32_to_f16 in Go: the integer
// round-to-nearest-even conversion every kernel uses, so that it can be
// checked against an independent implementation on the host.
func F32ToF16Bits(f float32) uint16 {
	x := math.Float32bits(f)
	s := (x >> 16) & 0x8000
	a := x & 0x7FFFFFFF
	switch {
	case a >= 0x7F800000: // inf or NaN
		nan := uint32(0)
		if a > 0x7F800000 {
			nan = 0x0200
		}
		return uint16(s | 0x7C00 | nan | (a&0x7FFFFF)>>13)
	case a >= 0x477FF000:
		return uint16(s | 0x7C00)
	case a >= 0x38800000:
		r := a - 0x38000000
		r += 0x0FFF + (r>>13)&1
		return uint16(s | r>>13)
	case a <= 0x33000000:
		return uint16(s)
	}
	e := a >> 23
	m := a&0x7FFFFF | 0x800000
	sh := 126 - e
	q := m >> sh
	rem := m & (1<<sh - 1)
	half := uint32(1) << (sh - 1)
	if rem > half || (rem == half && q&1 != 0) {
		q++
	}
	return uint16(s | q)
}
