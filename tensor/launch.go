package tensor

import (
	"fmt"
	"runtime"

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

// ewiseGrid is the grid of an elementwise kernel's storage-buffer form
// (unary.glsl, binary.glsl, accumulate.comp): an invocation per four
// elements where the operands and result are all Float32 (f32), else per
// two; on a CPU driver (SwiftShader: the texel forms serve lavapipe) at most
// cpuEwiseGroups workgroups, each looping over many blocks, since
// SwiftShader spends much of a small workgroup's time starting it.
func ewiseGrid(o *Tensor, f32 bool) [3]uint32 {
	items := (o.n + 1) / 2
	if f32 {
		items = max(1, o.n/4)
	}
	g := groups1D(o, items)
	if formsOf(o.dev).fewGroups {
		g[0] = min(g[0], uint32(cpuEwiseGroups))
	}
	return g
}

// cpuEwiseGroups caps ewiseGrid on CPU drivers: 64 per core. On 2 cores,
// SwiftShader's stream/add-f32 (tools/bench, 4194304 elements) moved
// 0.9 GB/s uncapped, 2.3-3.6 at 4 to 64 workgroups, 5.2-5.6 at 128, 3.6
// at 512 and 1.5 at 2048.
var cpuEwiseGroups = 64 * runtime.NumCPU()
