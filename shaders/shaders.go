// Package shaders holds vkamp's compute kernels as embedded SPIR-V with the
// metadata the runtime needs to build their pipelines, in vk's types (a
// kernel's tier is a vk.Tier, a binding's use a vk.Access). It is pure data: the
// GLSL sources sit beside this file, and `go generate` compiles them with glslc,
// validates them with spirv-val and rewrites spv/ and kernels_gen.go, which are
// committed so that users need no shader compiler.
package shaders

//go:generate ../scripts/shader-toolchain exec go run ./internal/gen

import (
	"embed"

	"github.com/vkamp/vkamp/vk"
)

//go:embed spv/*.spv
var spv embed.FS

// Kernel is one compiled variant of one op.
type Kernel struct {
	Name      string      // the op, the .comp file's base name
	Tier      vk.Tier     // the lowest device tier that can run this variant
	File      string      // path of the SPIR-V inside the embedded FS
	Bindings  []vk.Access // set 0, binding i
	PushSize  int         // bytes of push constants
	LocalSize [3]uint32
	// SpecLocalSizeX is true when local_size_x comes from specialization
	// constant 0, so the runtime may choose it.
	SpecLocalSizeX bool
}

// Code returns the kernel's SPIR-V.
func (k *Kernel) Code() []byte {
	b, err := spv.ReadFile(k.File)
	if err != nil {
		panic("shaders: embedded file missing: " + k.File) // a broken build, not an input error
	}
	return b
}

// Lookup returns the best variant of op for a device of tier t: the one with
// the highest tier not above t. ok is false when the op is unknown or has no
// variant a device of that tier can run.
func Lookup(op string, t vk.Tier) (k *Kernel, ok bool) {
	for i := range table {
		c := &table[i]
		if c.Name == op && c.Tier <= t && (k == nil || c.Tier > k.Tier) {
			k = c
		}
	}
	return k, k != nil
}

// All returns every compiled variant, for tests and tools.
func All() []Kernel { return append([]Kernel(nil), table...) }
