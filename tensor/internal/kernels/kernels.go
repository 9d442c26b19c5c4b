// Package kernels launches vkamp's embedded shaders: one typed function per
// kernel (kernels_gen.go, generated from the SPIR-V by `go generate
// ./shaders`), with its specialization constants, push constants and
// bindings as named struct fields. It builds each pipeline on first use for
// the device's tier and caches it on the device.
//
// It lives under tensor/internal so that only package tensor can launch a
// kernel: every op has one home.
package kernels

import (
	"fmt"
	"slices"
	"sync"

	"github.com/vkamp/vkamp/shaders"
	"github.com/vkamp/vkamp/vk"
)

// DType is an element type as the shaders code it (see the DType
// constants, generated from shaders/include/dtype.glsl).
type DType uint32

// DeterministicID is the id of the specialization constant DETERMINISTIC
// (shaders/include/det.glsl): on a device opened with Options.Deterministic
// every kernel that declares it runs its deterministic path. It lies above
// the launchers' ids (0-15): the device sets it, not a Spec field, so it
// can never collide with a kernel's own constants.
const DeterministicID = 31

// maxLocalSize caps the workgroup of elementwise kernels: SwiftShader allows
// 256 invocations, and larger groups gain nothing on GPUs for streaming work.
const maxLocalSize = 256

// Forms are one kernel family's launchers, paired by the generator: Plain,
// the storage-buffer form, serves every device; Texel, the texel form of a
// kernel with a `// texel form` line, serves where the device's forms table
// says texels do. Both take the kernel's own types.
type Forms[S, P, B any] struct {
	Plain, Texel func(d *vk.Device, groups [3]uint32, s S, p P, b B) error
}

// key identifies a pipeline by kernel and specialization constants,
// cheaply: launchers build one on every dispatch.
type key struct {
	op   string
	spec [20]uint32
	set  uint32 // which constants are given
}

// put gives constant id the value v; zero leaves the shader's default.
func (k *key) put(id int, v uint32) {
	if v != 0 {
		k.spec[id], k.set = v, k.set|1<<id
	}
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// run records the kernel k names on d.
func run(d *vk.Device, k key, groups [3]uint32, push []byte, bufs ...*vk.Buffer) error {
	c := d.Local(cacheKey{}, newCache).(*cache)
	c.mu.Lock()
	kern := c.m[k]
	c.mu.Unlock()
	var err error
	if kern == nil {
		kern, err = c.build(d, k)
	}
	if err == nil {
		err = d.Dispatch(kern, groups, push, bufs...)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", k.op, err)
	}
	return nil
}

// cache holds a device's pipelines by key, typed: a lookup neither boxes
// the key nor allocates, as vk's KernelFor would on every launch.
type cache struct {
	mu sync.Mutex
	m  map[key]*vk.Kernel
}

type cacheKey struct{}

func newCache() any { return &cache{m: map[key]*vk.Kernel{}} }

// build is run's slow path, apart so that k escapes to the heap only here.
func (c *cache) build(d *vk.Device, k key) (*vk.Kernel, error) {
	kern, err := d.KernelFor(k, func() (vk.KernelSource, error) { return source(d, k) })
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.m[k] = kern
	c.mu.Unlock()
	return kern, nil
}

func source(d *vk.Device, k key) (vk.KernelSource, error) {
	sk, ok := shaders.Lookup(k.op, d.Tier())
	if !ok {
		return vk.KernelSource{}, fmt.Errorf("kernels: no variant of %q for tier %s", k.op, d.Tier())
	}
	src := vk.KernelSource{
		Name:     k.op + "." + sk.Tier.String(),
		SPIRV:    sk.Code(),
		PushSize: sk.PushSize,
		Bindings: sk.Bindings,
		Spec:     map[uint32]uint32{},
	}
	if sk.SpecLocalSizeX {
		src.Spec[0] = LocalSize(d)
	}
	for id := range k.spec {
		if k.set&(1<<id) != 0 {
			src.Spec[uint32(id)] = k.spec[id]
		}
	}
	if d.Deterministic() {
		// Kernels without the constant ignore it (Vulkan drops map entries
		// a module does not declare).
		src.Spec[DeterministicID] = 1
	}
	if !d.Deterministic() && slices.ContainsFunc(sk.Bindings, func(a vk.Access) bool { return a&vk.Texels != 0 }) && driverHalves(d) {
		src.Spec[DriverHalvesID] = 1 // only texel forms declare it; probe_halves has no texels
	}
	return src, nil
}

// LocalSize is the workgroup size of the elementwise kernels on d.
func LocalSize(d *vk.Device) uint32 {
	info := d.Info()
	return min(maxLocalSize, info.MaxWorkgroupInvocations, info.MaxWorkgroupSize[0])
}

// Groups returns the workgroup count for a grid-stride kernel over n items:
// enough to cover them, within the device's limit (the kernel loops over the
// rest).
func Groups(d *vk.Device, n int) [3]uint32 {
	local := int(LocalSize(d))
	g := max(1, (n+local-1)/local)
	g = min(g, int(d.Info().MaxWorkgroupCount[0]), 1<<16-1)
	return [3]uint32{uint32(g), 1, 1}
}
