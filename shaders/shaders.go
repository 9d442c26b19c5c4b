// Package shaders holds vkamp's compute kernels as embedded SPIR-V with the
// metadata the runtime needs to build their pipelines. It is pure data: the
// GLSL sources sit beside this file, and `go generate` compiles them with glslc,
// validates them with spirv-val and rewrites spv/ and kernels_gen.go, which are
// committed so that users need no shader compiler.
package shaders

//go:generate go run ./internal/gen

import (
	"embed"
	"fmt"
)

//go:embed spv/*.spv
var spv embed.FS

// Tier is the capability level a kernel variant needs. Higher tiers need more
// of the device; a device runs the highest variant at or below its own tier.
type Tier int

const (
	// Packed stores fp16 two to a uint32 word and computes in fp32: every device.
	Packed Tier = iota
	// Storage16 reads and writes 16-bit values in storage buffers.
	Storage16
	// FP16 also has native float16_t arithmetic.
	FP16
)

var tierNames = [...]string{"packed", "storage16", "fp16"}

func (t Tier) String() string {
	if t < 0 || int(t) >= len(tierNames) {
		return fmt.Sprintf("Tier(%d)", int(t))
	}
	return tierNames[t]
}

// Access says how a kernel uses one of its storage-buffer bindings.
type Access uint8

const (
	Read  Access = 1 << iota // the kernel reads the binding
	Write                    // the kernel writes the binding
	// Texels marks a usamplerBuffer binding: a uniform texel buffer of
	// 16-byte texels (see vk.Texels).
	Texels
	ReadWrite = Read | Write
)

// Kernel is one compiled variant of one op.
type Kernel struct {
	Name      string   // the op, the .comp file's base name
	Tier      Tier     // the lowest device tier that can run this variant
	File      string   // path of the SPIR-V inside the embedded FS
	Bindings  []Access // set 0, binding i
	PushSize  int      // bytes of push constants
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
func Lookup(op string, t Tier) (k *Kernel, ok bool) {
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
