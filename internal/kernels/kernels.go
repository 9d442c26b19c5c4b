// Package kernels builds vkamp's embedded shaders into pipelines on a device:
// it picks the variant for the device's tier and fits the workgroup size.
package kernels

import (
	"encoding/binary"
	"fmt"

	"github.com/vkamp/vkamp/shaders"
	"github.com/vkamp/vkamp/vk"
)

// maxLocalSize caps the workgroup of elementwise kernels: SwiftShader allows
// 256 invocations, and larger groups gain nothing on GPUs for streaming work.
const maxLocalSize = 256

// Get returns op's kernel for d, built on first use and cached by the device.
func Get(d *vk.Device, op string) (*vk.Kernel, error) {
	return GetSpec(d, op, nil)
}

// GetSpec is Get with specialization constants. Constant 0, the workgroup
// size of kernels that take it, defaults to LocalSize(d).
func GetSpec(d *vk.Device, op string, spec map[uint32]uint32) (*vk.Kernel, error) {
	key := cacheKey{op: op}
	for id, v := range spec {
		if id >= uint32(len(key.spec)) {
			return nil, fmt.Errorf("kernels: %s: specialization constant %d out of range", op, id)
		}
		key.spec[id], key.set = v, key.set|1<<id
	}
	return d.KernelFor(key, func() (vk.KernelSource, error) { return source(d, op, spec) })
}

// cacheKey identifies a kernel by op and specialization constants, cheaply:
// GetSpec runs on every dispatch.
type cacheKey struct {
	op   string
	spec [16]uint32
	set  uint16 // which constants are given
}

func source(d *vk.Device, op string, spec map[uint32]uint32) (vk.KernelSource, error) {
	k, ok := shaders.Lookup(op, d.Tier())
	if !ok {
		return vk.KernelSource{}, fmt.Errorf("kernels: no variant of %q for tier %s", op, d.Tier())
	}
	src := vk.KernelSource{
		Name:     op + "." + k.Tier.String(),
		SPIRV:    k.Code(),
		PushSize: k.PushSize,
		Spec:     map[uint32]uint32{},
	}
	for _, a := range k.Bindings {
		src.Bindings = append(src.Bindings, a)
	}
	if k.SpecLocalSizeX {
		src.Spec[0] = LocalSize(d)
	}
	for id, v := range spec {
		src.Spec[id] = v
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

// Push packs 32-bit push constants in order.
func Push(words ...uint32) []byte {
	b := make([]byte, 0, 4*len(words))
	for _, w := range words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

// Run records op on d with the given specialization constants, grid, push
// constants and buffers: the one launch path of the packages that run
// vkamp's kernels.
func Run(d *vk.Device, op string, spec map[uint32]uint32, groups [3]uint32, push []byte, bufs ...*vk.Buffer) error {
	k, err := GetSpec(d, op, spec)
	if err != nil {
		return err
	}
	return d.Dispatch(k, groups, push, bufs...)
}
