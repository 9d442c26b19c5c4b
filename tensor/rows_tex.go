package tensor

import (
	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// The row kernels' texel forms (shaders/include/rows_tex.glsl): where a
// row kernel would run with one invocation per row (segment's 1: a CPU
// driver, rows up to 4096 long, not the deterministic mode) and the
// texel forms serve the device, the row is read as texels instead of
// storage-buffer words, in the same order, so the results are the same
// bits. On lavapipe, over [16384, 1024] fp32 (tools/bench, beside
// copy/buffer): SumAxis went from 0.07x to 0.49x, Softmax from 0.02x to
// 0.11x.

// rowTexelsOff turns the row kernels' texel forms off, for tests that
// compare them with the storage-buffer forms.
var rowTexelsOff bool

// rowTexels reports whether a row kernel with segment seg, reading ins,
// takes its texel form on d.
func rowTexels(d *vk.Device, seg uint32, ins ...*vk.Buffer) bool {
	if rowTexelsOff || seg != 1 || d.Deterministic() || !texelsDevice(d) {
		return false
	}
	for _, b := range ins {
		if !b.TexelsFit() {
			return false
		}
	}
	return true
}

// texRowGrid is the grid of a row kernel's texel form over rows whose
// invocation loops perRow times per row: texRows's, grown where an
// invocation would otherwise loop past the driver's limit.
func texRowGrid(d *vk.Device, rows, perRow int) [3]uint32 {
	g := texRows(rows)
	if limit := loopLimit(d); limit != 0 {
		per := max(1, limit/(1+perRow)) // rows one invocation may take
		g[0] = uint32(min(max(int(g[0]), ceilDiv(rows, per*texLocal)), 1<<16-1))
	}
	return g
}

// texRowLoops is the loop iterations per row of a texel form making passes
// over a row of cols: whole blocks of 8 and up to 14 elements one by one.
func texRowLoops(cols, passes int) int { return passes * (cols/8 + 14) }

// withRowsTex is a rows kernel that takes tex, its texel form, where it
// serves.
func withRowsTex(plain, tex rowsKernel) rowsKernel {
	return func(d *vk.Device, g [3]uint32, s xSpec, p kernels.RowsPush, b xyBind) error {
		if rowTexels(d, p.Seg, b.X) {
			s.LocalSizeX = texLocal
			return tex(d, texRowGrid(d, int(p.Rows), texRowLoops(int(p.Cols), 1)), s, p, b)
		}
		return plain(d, g, s, p, b)
	}
}

// withSoftmaxTex is withRowsTex for the softmax kernels (three passes).
func withSoftmaxTex(plain, tex softmaxKernel) softmaxKernel {
	return func(d *vk.Device, g [3]uint32, s xSpec, p kernels.SoftmaxPush, b xyBind) error {
		if rowTexels(d, p.Seg, b.X) {
			s.LocalSizeX = texLocal
			return tex(d, texRowGrid(d, int(p.Rows), texRowLoops(int(p.Cols), 3)), s, p, b)
		}
		return plain(d, g, s, p, b)
	}
}

// withSoftmaxBackTex is withRowsTex for the softmax backward kernels (two
// passes).
func withSoftmaxBackTex(plain, tex softmaxBackKernel) softmaxBackKernel {
	return func(d *vk.Device, g [3]uint32, s softmaxBackSpec, p kernels.SoftmaxPush, b softmaxBackBind) error {
		if rowTexels(d, p.Seg, b.Y, b.Dy) {
			s.LocalSizeX = texLocal
			return tex(d, texRowGrid(d, int(p.Rows), texRowLoops(int(p.Cols), 2)), s, p, b)
		}
		return plain(d, g, s, p, b)
	}
}
