package kernels_test

import (
	"encoding/binary"
	"flag"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

var fullSweep = flag.Bool("vkamp.fullsweep", false, "cast all 2^32 fp32 values to fp16 (minutes)")

// run dispatches op over n elements with the given buffers.
func run(t testing.TB, d *vk.Device, op string, n int, push []byte, bufs ...*vk.Buffer) {
	t.Helper()
	k, err := kernels.Get(d, op)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Dispatch(k, kernels.Groups(d, n), push, bufs...); err != nil {
		t.Fatal(err)
	}
}

func alloc(t testing.TB, d *vk.Device, n int) *vk.Buffer {
	t.Helper()
	b, err := d.Alloc(int64(n))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free() })
	return b
}

func write32(t testing.TB, b *vk.Buffer, v []uint32) {
	t.Helper()
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], x)
	}
	if err := b.Write(0, raw); err != nil {
		t.Fatal(err)
	}
}

func read32(t testing.TB, b *vk.Buffer, n int) []uint32 {
	t.Helper()
	raw := make([]byte, 4*n)
	if err := b.Read(0, raw); err != nil {
		t.Fatal(err)
	}
	v := make([]uint32, n)
	for i := range v {
		v[i] = binary.LittleEndian.Uint32(raw[4*i:])
	}
	return v
}

// fp16 buffers hold little-endian uint16s: in the packed tier two per word,
// low half first, which is the same bytes.
func write16(t testing.TB, b *vk.Buffer, v []uint16) {
	t.Helper()
	raw := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(raw[2*i:], x)
	}
	if err := b.Write(0, raw); err != nil {
		t.Fatal(err)
	}
}

func read16(t testing.TB, b *vk.Buffer, n int) []uint16 {
	t.Helper()
	raw := make([]byte, 2*n)
	if err := b.Read(0, raw); err != nil {
		t.Fatal(err)
	}
	v := make([]uint16, n)
	for i := range v {
		v[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return v
}

func castF32ToF16(t testing.TB, d *vk.Device, in []uint32) []uint16 {
	t.Helper()
	n := len(in)
	src, dst := alloc(t, d, 4*n), alloc(t, d, 2*n)
	write32(t, src, in)
	run(t, d, "cast_f32_f16", n, kernels.Push(uint32(n)), src, dst)
	out := read16(t, dst, n)
	src.Free()
	dst.Free()
	return out
}

// TestCastAllHalves casts every fp16 value to fp32 and back.
func TestCastAllHalves(t *testing.T) {
	d := devtest.Open(t)
	const n = 1 << 16
	halves := make([]uint16, n)
	for i := range halves {
		halves[i] = uint16(i)
	}
	h, f := alloc(t, d, 2*n), alloc(t, d, 4*n)
	write16(t, h, halves)
	run(t, d, "cast_f16_f32", n, kernels.Push(n), h, f)
	got := read32(t, f, n)
	bad := 0
	for i, g := range got {
		want := math.Float32bits(float16.Frombits(uint16(i)).Float32())
		if g != want && bad < 10 {
			t.Errorf("f16 %#04x -> f32 %#08x, want %#08x", i, g, want)
			bad++
		}
	}
	back := castF32ToF16(t, d, got)
	for i, g := range back {
		// NaN payloads survive; a signalling NaN comes back quiet, as IEEE says.
		want := float16.Fromfloat32(float16.Frombits(uint16(i)).Float32()).Bits()
		if g != want && bad < 20 {
			t.Errorf("f16 %#04x -> f32 -> f16 %#04x, want %#04x", i, g, want)
			bad++
		}
	}
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
	in = append(in, 0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FBFFFFF, 0xFF800001, 0x7FFFFFFF, 0x7F802000, 0x7FC01000)
	return in
}

// TestCastF32ToF16 checks fp32 -> fp16 bit for bit against x448/float16 on
// over 16 million inputs.
func TestCastF32ToF16(t *testing.T) {
	d := devtest.Open(t)
	in := castInputs()
	if len(in) < 16_000_000 {
		t.Fatalf("only %d inputs", len(in))
	}
	got := castF32ToF16(t, d, in)
	checkCast(t, in, got)
	t.Logf("%d inputs bit-exact", len(in))
}

func checkCast(t testing.TB, in []uint32, got []uint16) {
	t.Helper()
	bad := 0
	for i, x := range in {
		want := float16.Fromfloat32(math.Float32frombits(x)).Bits()
		if got[i] != want {
			bad++
			if bad <= 10 {
				t.Errorf("f32 %#08x (%g) -> f16 %#04x, want %#04x", x, math.Float32frombits(x), got[i], want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d conversions differ", bad, len(in))
	}
}

// TestCastFullSweep casts all 2^32 fp32 patterns; it runs only with
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
		checkCast(t, in, castF32ToF16(t, d, in))
		if t.Failed() {
			return
		}
	}
}
