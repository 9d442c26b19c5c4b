package kernels

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// TestDriverHalves: the device's answer agrees with the driver's decode
// of every half read back here, and a texel form built under that answer
// decodes them all exactly (cast_tex, fp16 to fp32, where the device has
// texel forms). On lavapipe with F16C the answer is yes.
func TestDriverHalves(t *testing.T) {
	d := devtest.Open(t)
	const n = 1 << 16
	out, err := d.Alloc(8 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	if err := ProbeHalves(d, Groups(d, n), ProbeHalvesSpec{}, ProbeHalvesPush{N: n}, ProbeHalvesBind{Out: out}); err != nil {
		t.Fatal(err)
	}
	raw := read(t, d, out, 8*n)
	wrong := 0
	for h := range n {
		want := math.Float32bits(float16.Frombits(uint16(h)).Float32())
		if binary.LittleEndian.Uint32(raw[8*h:]) != want || binary.LittleEndian.Uint32(raw[8*h+4:]) != want {
			wrong++
		}
	}
	if got := driverHalves(d); got != (wrong == 0) {
		t.Fatalf("driverHalves %v, but the driver decodes %d of %d halves wrong", got, wrong, n)
	}
	t.Logf("%s: driver's fp16 decode exact: %v (%d wrong)", d.Info().Name, wrong == 0, wrong)

	if !d.Info().ShaderInt64 || d.Info().Type != vk.TypeCPU {
		return // no texel forms
	}
	in, err := d.Alloc(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Free()
	halves := make([]byte, 2*n)
	for h := range n {
		binary.LittleEndian.PutUint16(halves[2*h:], uint16(h))
	}
	if err := in.Write(0, halves); err != nil {
		t.Fatal(err)
	}
	if err := CastTex(d, [3]uint32{4, 1, 1}, CastTexSpec{In0DT: DTypeF16, OutDT: DTypeF32}, EwisePush{N: n}, CastTexBind{A: in, D: out}); err != nil {
		t.Fatal(err)
	}
	raw = read(t, d, out, 4*n)
	for h := range n {
		want := math.Float32bits(float16.Frombits(uint16(h)).Float32())
		if got := binary.LittleEndian.Uint32(raw[4*h:]); got != want {
			t.Fatalf("cast_tex: half %#04x -> %#08x, want %#08x", h, got, want)
		}
	}
}

func read(t *testing.T, d *vk.Device, b *vk.Buffer, n int) []byte {
	t.Helper()
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	raw := make([]byte, n)
	if err := b.Read(0, raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestDriverHalvesInCapture: a texel form first built inside a capture
// leaves the capture whole (the probe neither goes into the graph nor reads
// a buffer there) and takes the integer decode; the device probes at the
// next kernel built outside it.
func TestDriverHalvesInCapture(t *testing.T) {
	d := devtest.Open(t)
	if !d.Info().ShaderInt64 || d.Info().Type != vk.TypeCPU {
		t.Skip("no texel forms on this device")
	}
	const n = 1 << 10
	in, err := d.Alloc(2 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Free()
	out, err := d.Alloc(4 * n)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Free()
	if err := d.BeginCapture(); err != nil {
		t.Fatal(err)
	}
	if err := CastTex(d, [3]uint32{1, 1, 1}, CastTexSpec{In0DT: DTypeF16, OutDT: DTypeF32}, EwisePush{N: n}, CastTexBind{A: in, D: out}); err != nil {
		t.Fatal(err)
	}
	g, err := d.EndCapture()
	if err != nil {
		t.Fatalf("capture with the first texel form built inside: %v", err)
	}
	if g.Dispatches() != 1 {
		t.Errorf("graph of %d dispatches, want the cast alone", g.Dispatches())
	}
	g.Close()
	p := d.Local(halvesKey{}, func() any { return &halvesProbe{} }).(*halvesProbe)
	if p.done {
		t.Error("probed inside the capture")
	}
	driverHalves(d)
	if !p.done {
		t.Error("not probed outside the capture")
	}
}
