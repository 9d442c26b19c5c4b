package tensor

import (
	"runtime"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// The texel forms of elementwise kernels (shaders/include/texels.glsl) read
// their inputs as uniform texel buffers and make 8 elements per invocation.
// The forms table (forms.go) says where they serve; elsewhere the
// storage-buffer forms do.

// texelsOn reports whether the texel forms serve out's device (forms.go)
// and every input fits one texel view (a nil input is not bound).
func texelsOn(out *Tensor, ins ...*Tensor) bool {
	if !texelsDevice(out.dev) {
		return false
	}
	for _, t := range ins {
		if t != nil && !t.buf.TexelsFit() {
			return false
		}
	}
	return true
}

// texelsDevice reports whether the texel forms serve d.
func texelsDevice(d *vk.Device) bool { return formsOf(d).texels }

// texelsServe is texelsOn for kernels that bind whole buffers, such as the
// memory blocks of a block table: the texel forms serve d and every buffer
// fits one texel view.
func texelsServe(d *vk.Device, bufs ...*vk.Buffer) bool {
	if !texelsDevice(d) {
		return false
	}
	for _, b := range bufs {
		if !b.TexelsFit() {
			return false
		}
	}
	return true
}

// octs is the grid of a texel-form kernel, whose invocations make blocks of
// 8 elements: at most texGroups workgroups, so that each invocation loops
// over many blocks and the partial block's code, which lavapipe runs in
// every invocation, is rare.
func octs(o *Tensor) [3]uint32 { return texGrid(o, (o.n+7)/8) }

// texGroups caps the workgroups of a texel form: two per core of the CPU
// the driver runs on (this process's: lavapipe runs a thread per core),
// each looping over many blocks. lavapipe spends some 3 us on every
// workgroup (Mesa 22.3, 2 cores; `go test -bench ReLUF16 ./tensor`): a
// ReLU of 262144 fp16 elements took 0.75 ms a call on 128 workgroups,
// 0.34-0.44 ms on 4.
var texGroups = max(2, 2*runtime.NumCPU())

// texLocal is the workgroup of the row kernels' texel forms (one
// invocation per row): small, so that a few hundred rows still make
// workgroups for several cores.
const texLocal = 64

// texGrid is the grid of a texel form over n items: texLoopGrid's, with no
// loop of its own per item.
func texGrid(o *Tensor, n int) [3]uint32 {
	return texLoopGrid(o.dev, n, 0, int(kernels.LocalSize(o.dev)))
}

// texLoopGrid is the grid of a texel form whose workgroups of local
// invocations loop over n items, each per iterations: at most texGroups
// workgroups, grown where an invocation would otherwise loop past the
// driver's limit.
func texLoopGrid(d *vk.Device, n, per, local int) [3]uint32 {
	g := max(1, min(ceilDiv(n, local), texGroups))
	if limit := loopLimit(d); limit != 0 {
		items := max(1, limit/(1+per)) // items one invocation may take
		g = max(g, ceilDiv(n, items*local))
	}
	return [3]uint32{uint32(min(g, 1<<16-1)), 1, 1}
}

// castTexels records t's cast into out with a texel form, if one serves:
// between Float32 and a 16-bit float (exact through fp32 bit patterns). It
// reports whether it did.
func castTexels(t, out *Tensor) (bool, error) {
	from, to := t.dtype, out.dtype
	if !texelsOn(out, t) {
		return false, nil
	}
	d, n := out.dev, uint32(t.n)
	switch {
	case (from == Float32 && !to.wide()) || (!from.wide() && to == Float32):
		return true, kernels.CastTex(d, octs(out), kernels.CastTexSpec{In0DT: from.code(), OutDT: to.code()},
			kernels.EwisePush{N: n}, kernels.CastTexBind{A: t.buf, D: out.buf})
	}
	return false, nil
}
