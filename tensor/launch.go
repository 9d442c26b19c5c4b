package tensor

import (
	"fmt"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
)

// Ops launch their kernels through the typed launchers of
// tensor/internal/kernels, generated from the SPIR-V: an op makes its output
// with newOut, returns it at once if it carries an error (its buffers may be
// missing), and else passes the launcher's error to launched.

// sameDevice panics unless every tensor is live and on the first's device.
func sameDevice(op string, ts ...*Tensor) {
	for _, t := range ts {
		t.live(op)
		if t.dev != ts[0].dev {
			usagePanic(op, "tensors on different devices")
		}
	}
}

// launched records err, returned by a kernel launcher, into out: out then
// carries it, and its memory is released.
func launched(out *Tensor, err error) {
	if err != nil && out.err == nil {
		out.fail(fmt.Errorf("tensor: %w", err))
	}
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

// pairs is the grid of an elementwise kernel: one invocation per two
// elements, so that each 16-bit output word has one writer.
func pairs(o *Tensor) [3]uint32 { return groups1D(o, (o.n+1)/2) }
