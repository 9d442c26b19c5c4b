package kernels

import (
	"encoding/binary"
	"fmt"

	"github.com/vkamp/vkamp/vk"
)

// Run records the kernel named op with specialization constants given by
// id, as raw words. It is the launch path of tensor's ops not yet moved to
// the typed launchers of kernels_gen.go (elementwise, reductions, casts,
// matmul), which replace it: new code calls a typed launcher.
func Run(d *vk.Device, op string, spec map[uint32]uint32, groups [3]uint32, push []byte, bufs ...*vk.Buffer) error {
	k := key{op: op}
	for id, v := range spec {
		if id >= uint32(len(k.spec)) {
			return fmt.Errorf("kernels: %s: specialization constant %d out of range", op, id)
		}
		k.spec[id], k.set = v, k.set|1<<id // a zero given overrides the default
	}
	kern, err := d.KernelFor(k, func() (vk.KernelSource, error) { return source(d, k) })
	if err != nil {
		return err
	}
	return d.Dispatch(kern, groups, push, bufs...)
}

// Push packs 32-bit push constants in order, for Run.
func Push(words ...uint32) []byte {
	b := make([]byte, 0, 4*len(words))
	for _, w := range words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return b
}
