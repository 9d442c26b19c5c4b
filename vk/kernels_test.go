package vk_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/shaders"
	"github.com/vkamp/vkamp/vk"
)

// The tests dispatch some of vkamp's own shaders (fill32, copy32,
// copy_texels), built here from their embedded SPIR-V as package tensor
// builds them: vk itself knows no shader.

// kernelKey caches a test kernel on its device.
type kernelKey string

// buildKernel returns op's kernel for d's tier, built on first use and
// cached by the device, its workgroup size set as tensor sets it.
func buildKernel(d *vk.Device, op string) (*vk.Kernel, error) {
	return d.KernelFor(kernelKey(op), func() (vk.KernelSource, error) {
		k, ok := shaders.Lookup(op, d.Tier())
		if !ok {
			return vk.KernelSource{}, fmt.Errorf("no variant of %q for tier %s", op, d.Tier())
		}
		src := vk.KernelSource{Name: op + "." + k.Tier.String(), SPIRV: k.Code(), PushSize: k.PushSize,
			Bindings: k.Bindings, Spec: map[uint32]uint32{}}
		if k.SpecLocalSizeX {
			src.Spec[0] = localSize(d)
		}
		return src, nil
	})
}

// localSize is the workgroup size of the elementwise kernels on d.
func localSize(d *vk.Device) uint32 {
	info := d.Info()
	return min(256, info.MaxWorkgroupInvocations, info.MaxWorkgroupSize[0])
}

// groups is the grid of a grid-stride kernel over n items.
func groups(d *vk.Device, n int) [3]uint32 {
	local := int(localSize(d))
	g := min(max(1, (n+local-1)/local), int(d.Info().MaxWorkgroupCount[0]), 1<<16-1)
	return [3]uint32{uint32(g), 1, 1}
}

// push packs 32-bit push constants in order.
func push(words ...uint32) []byte {
	b := make([]byte, 0, 4*len(words))
	for _, w := range words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}

// TestKernelSpecLimit checks that a pipeline takes every specialization
// constant it is given, up to the bound, and refuses more with an error:
// the shim once kept the first 16 of a Go map's random order and dropped
// the rest, so a kernel with 17 set constants (matmul_coop_emu on bf16,
// transposed) ran with a random one at its default.
func TestKernelSpecLimit(t *testing.T) {
	d := devtest.Open(t)
	k, ok := shaders.Lookup("fill32", d.Tier())
	if !ok {
		t.Fatal("no fill32")
	}
	for _, n := range []int{32, 33} {
		src := vk.KernelSource{Name: fmt.Sprintf("fill32-spec%d", n), SPIRV: k.Code(), PushSize: k.PushSize,
			Bindings: k.Bindings, Spec: map[uint32]uint32{0: localSize(d)}}
		for id := uint32(100); len(src.Spec) < n; id++ { // ids the shader does not use
			src.Spec[id] = id
		}
		_, err := d.KernelFor(kernelKey(src.Name), func() (vk.KernelSource, error) { return src, nil })
		if n == 32 && err != nil {
			t.Errorf("%d constants: %v", n, err)
		}
		if n == 33 && !errors.Is(err, vk.ErrInvalidArgument) {
			t.Errorf("%d constants: got %v, want ErrInvalidArgument", n, err)
		}
	}
}
