package kernels

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/vk"
)

// DriverHalvesID is the id of the specialization constant DRIVER_HALVES
// (shaders/include/texels.glsl): where driverHalves holds, every kernel
// with texel bindings that declares it decodes fp16 with the driver's
// unpackHalf2x16. Like DeterministicID, the device sets it.
const DriverHalvesID = 30

// halvesProbe is a device's driverHalves answer, once it has one.
type halvesProbe struct {
	mu          sync.Mutex
	done, exact bool
}

type halvesKey struct{}

// driverHalves reports whether d's unpackHalf2x16 gives every fp16 value's
// exact fp32 bits, subnormals and NaN payloads included (those of
// fp16.glsl's f16_to_f32, which x448/float16 matches), from either half of
// a word. Vulkan leaves denormals to the driver, and a CPU driver's decode
// may depend on the host CPU (lavapipe takes F16C's vcvtph2ps where it has
// it), so each device is probed once: probe_halves decodes all 65536 values
// and the host compares. Inside a capture it answers false without
// probing (the probe would go into the graph, and its read would fail the
// capture), and a probe that fails answers false; either is tried again at
// the next kernel built: the integer decode gives the same bits, only
// slower.
func driverHalves(d *vk.Device) bool {
	p := d.Local(halvesKey{}, func() any { return &halvesProbe{} }).(*halvesProbe)
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.done && !d.Capturing() {
		exact, err := probeHalves(d)
		p.done, p.exact = err == nil, exact && err == nil
	}
	return p.exact
}

// probeHalves runs probe_halves on d and compares its output.
func probeHalves(d *vk.Device) (bool, error) {
	const n = 1 << 16
	out, err := d.Alloc(8 * n)
	if err != nil {
		return false, err
	}
	defer out.Free()
	if err := ProbeHalves(d, Groups(d, n), ProbeHalvesSpec{}, ProbeHalvesPush{N: n}, ProbeHalvesBind{Out: out}); err != nil {
		return false, err
	}
	if err := d.Wait(); err != nil {
		return false, err
	}
	raw := make([]byte, 8*n)
	if err := out.Read(0, raw); err != nil {
		return false, err
	}
	for h := range n {
		want := float16.Frombits(uint16(h)).Float32()
		lo, hi := binary.LittleEndian.Uint32(raw[8*h:]), binary.LittleEndian.Uint32(raw[8*h+4:])
		if lo != math.Float32bits(want) || hi != math.Float32bits(want) {
			return false, nil
		}
	}
	return true, nil
}
