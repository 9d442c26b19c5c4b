package nn

import (
	"fmt"

	"github.com/vkamp/vkamp/internal/kernels"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// run records one of nn's kernels producing out; failures make out carry
// the error, like any tensor op.
func run(out *tensor.Tensor, op string, spec map[uint32]uint32, groups [3]uint32, push []uint32, bind ...*tensor.Tensor) *tensor.Tensor {
	for _, t := range bind {
		if err := t.Err(); err != nil {
			out.Fail(err)
			return out
		}
	}
	if err := dispatch(out.Device(), op, spec, groups, push, bind...); err != nil {
		out.Fail(err)
	}
	return out
}

// dispatch records one of nn's kernels over tensors.
func dispatch(d *vk.Device, op string, spec map[uint32]uint32, groups [3]uint32, push []uint32, bind ...*tensor.Tensor) error {
	bufs := make([]*vk.Buffer, len(bind))
	for i, t := range bind {
		if err := t.Err(); err != nil {
			return err
		}
		bufs[i] = t.Buffer()
	}
	return dispatchBuffers(d, op, spec, groups, push, bufs...)
}

func dispatchBuffers(d *vk.Device, op string, spec map[uint32]uint32, groups [3]uint32, push []uint32, bufs ...*vk.Buffer) error {
	if err := kernels.Run(d, op, spec, groups, kernels.Push(push...), bufs...); err != nil {
		return fmt.Errorf("nn: %s: %w", op, err)
	}
	return nil
}

func bit(dt tensor.DType) uint32 {
	if dt == tensor.Float16 {
		return 1
	}
	return 0
}

// pairs is the grid of a kernel with one invocation per two elements.
func pairs(d *vk.Device, n int) [3]uint32 { return kernels.Groups(d, (n+1)/2) }

// rowsGrid is the grid of a kernel with one workgroup per row.
func rowsGrid(rows int) [3]uint32 { return [3]uint32{uint32(min(rows, 65535)), 1, 1} }
