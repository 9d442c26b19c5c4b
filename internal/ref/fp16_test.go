package ref_test

import (
	"math"
	"testing"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/ref"
)

// FuzzF32ToF16 checks the kernels' fp32 -> fp16 algorithm against
// x448/float16, an independent implementation, and the round trip of every
// fp16 value through fp32.
func FuzzF32ToF16(f *testing.F) {
	for _, x := range []uint32{0, 0x80000000, 0x3F800000, 0x477FEFFF, 0x477FF000, 0x33000000, 0x33000001,
		0x387FE000, 0x7F800000, 0x7FC00000, 0x7F800001, 0x00000001, 0xFFFFFFFF} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x uint32) {
		v := math.Float32frombits(x)
		if got, want := ref.F32ToF16Bits(v), float16.Fromfloat32(v).Bits(); got != want {
			t.Fatalf("%#08x: %#04x, x448 gives %#04x", x, got, want)
		}
		h := uint16(x)
		back := ref.F32ToF16Bits(float16.Frombits(h).Float32())
		if want := float16.Fromfloat32(float16.Frombits(h).Float32()).Bits(); back != want {
			t.Fatalf("half %#04x round trip gives %#04x, want %#04x", h, back, want)
		}
	})
}
