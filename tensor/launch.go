package tensor

import (
	"fmt"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// sameDevice panics unless every tensor is live and on the first's device.
func sameDevice(op string, ts ...*Tensor) {
	for _, t := range ts {
		t.live(op)
		if t.dev != ts[0].dev {
			usagePanic(op, "tensors on different devices")
		}
	}
}

// launch records kernel op over out and args (bound in the order args then
// out, or as the caller lists them in bufs). Failures go into out's error.
func launch(out *Tensor, op string, spec map[uint32]uint32, groups [3]uint32, push []uint32, bind ...*Tensor) {
	if out.err != nil {
		return
	}
	if err := run(out.dev, op, spec, groups, push, bind...); err != nil {
		out.fail(err)
	}
}

// run records kernel op over the tensors' buffers.
func run(d *vk.Device, op string, spec map[uint32]uint32, groups [3]uint32, push []uint32, bind ...*Tensor) error {
	bufs := make([]*vk.Buffer, len(bind))
	for i, t := range bind {
		bufs[i] = t.buf
	}
	if err := kernels.Run(d, op, spec, groups, kernels.Push(push...), bufs...); err != nil {
		return fmt.Errorf("tensor: %s: %w", op, err)
	}
	return nil
}

// fail turns out into a carrier of err, releasing its memory.
func (t *Tensor) fail(err error) {
	t.err = err
	if t.buf != nil {
		t.buf.Free()
		t.buf = nil
	}
}

// groups1D is the grid for a grid-stride kernel over n items.
func groups1D(out *Tensor, n int) [3]uint32 { return kernels.Groups(out.dev, n) }

// dtypeBit is a specialization constant value: 1 for Float16, 0 for Float32.
func dtypeBit(d DType) uint32 {
	if d == Float16 {
		return 1
	}
	return 0
}
