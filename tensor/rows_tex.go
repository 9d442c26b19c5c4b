package tensor

import (
	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// The row kernels' texel forms (shaders/include/rows_tex.glsl): on a CPU
// driver that the texel forms serve, outside the deterministic mode, the
// row kernels take their texel forms, one invocation per row reading the
// row as texels instead of storage-buffer words. Rows up to 4096 long,
// which the storage-buffer forms also reduce with one invocation per row,
// are read in the same order: the same bits. Longer rows, which those
// reduce with a workgroup tree, keep the tree in the row reductions (Sum's
// first pass over a large tensor has long rows, where a serial fp32 sum
// would lose accuracy), but the softmax family sums them in order (within
// the tests' tolerances): lavapipe's barriers cost far more than the
// serial loop, Softmax over [64, 50257] took 8-12 ms instead of 90-100 ms.
// On lavapipe, over [16384, 1024] fp32 (tools/bench, beside copy/buffer,
// four runs each on a loaded machine): SumAxis went from 0.05-0.09x to
// 0.34-0.54x, Softmax from 0.01-0.03x to 0.06-0.14x; the softmax backward
// passes took about a tenth of their time.

// rowTexelsOff turns the row kernels' texel forms off, for tests that
// compare them with the storage-buffer forms.
var rowTexelsOff bool

// rowTexels reports whether a row kernel making passes over rows of cols,
// reading ins, takes its texel form on d: not where one row would loop
// past the driver's limit (rows of about 170000 for softmax on lavapipe).
func rowTexels(d *vk.Device, cols, passes int, ins ...*vk.Buffer) bool {
	if rowTexelsOff || d.Deterministic() || !texelsServe(d, ins...) {
		return false
	}
	limit := loopLimit(d)
	return limit == 0 || 1+texRowLoops(cols, passes) <= limit
}

// texRowGrid is the grid of a row kernel's texel form (workgroups of
// texLocal, an invocation per row) over rows whose invocation loops perRow
// times per row: at most texGroups workgroups, grown where an invocation
// would otherwise loop past the driver's limit (texLoopGrid).
func texRowGrid(d *vk.Device, rows, perRow int) [3]uint32 {
	return texLoopGrid(d, rows, perRow, texLocal)
}

// texRowLoops is the loop iterations per row of a texel form making passes
// over a row of cols: whole blocks of 8 and up to 14 elements one by one.
func texRowLoops(cols, passes int) int { return passes * (cols/8 + 14) }

// withRowsTex is a rows kernel that takes tex, its texel form, where it
// serves.
func withRowsTex(k kernels.Forms[xSpec, kernels.RowsPush, xyBind]) rowsKernel {
	plain, tex := k.Plain, k.Texel
	return func(d *vk.Device, g [3]uint32, s xSpec, p kernels.RowsPush, b xyBind) error {
		if p.Seg == 1 && rowTexels(d, int(p.Cols), 1, b.X) { // a longer sum keeps its tree's accuracy
			s.LocalSizeX = texLocal
			return tex(d, texRowGrid(d, int(p.Rows), texRowLoops(int(p.Cols), 1)), s, p, b)
		}
		return plain(d, g, s, p, b)
	}
}

// withColsTex is withRowsTex for the column kernels (cols.glsl): their
// texel form makes a block of 8 outputs per invocation where the rows are
// whole blocks (inner a multiple of 8), in the same order, the same bits.
func withColsTex(k kernels.Forms[colsSpec, kernels.ColsPush, xyBind]) colsKernel {
	plain, tex := k.Plain, k.Texel
	return func(d *vk.Device, g [3]uint32, s colsSpec, p kernels.ColsPush, b xyBind) error {
		if !rowTexelsOff && p.Inner%8 == 0 && texelsServe(d, b.X) {
			// Workgroups as large as the blocks allow with one for each of
			// texGroups/2 (a core each): a workgroup reads its rows
			// together (cols.glsl). 8 to 64 invocations, a power of two
			// (each size is a pipeline).
			blocks, local := int(p.Outer*p.Inner/8), 8
			for local < texLocal && local*texGroups <= blocks {
				local *= 2
			}
			s.LocalSizeX = uint32(local)
			return tex(d, texLoopGrid(d, blocks, int(p.K), local), s, p, b)
		}
		return plain(d, g, s, p, b)
	}
}

// withSoftmaxTex is withRowsTex for the softmax kernels (three passes).
func withSoftmaxTex(k kernels.Forms[xSpec, kernels.SoftmaxPush, xyBind]) softmaxKernel {
	plain, tex := k.Plain, k.Texel
	return func(d *vk.Device, g [3]uint32, s xSpec, p kernels.SoftmaxPush, b xyBind) error {
		if rowTexels(d, int(p.Cols), 3, b.X) {
			s.LocalSizeX = texLocal
			return tex(d, texRowGrid(d, int(p.Rows), texRowLoops(int(p.Cols), 3)), s, p, b)
		}
		return plain(d, g, s, p, b)
	}
}

// withSoftmaxBackTex is withRowsTex for the softmax backward kernels (two
// passes).
func withSoftmaxBackTex(k kernels.Forms[softmaxBackSpec, kernels.SoftmaxPush, softmaxBackBind]) softmaxBackKernel {
	plain, tex := k.Plain, k.Texel
	return func(d *vk.Device, g [3]uint32, s softmaxBackSpec, p kernels.SoftmaxPush, b softmaxBackBind) error {
		if rowTexels(d, int(p.Cols), 2, b.Y, b.Dy) {
			s.LocalSizeX = texLocal
			return tex(d, texRowGrid(d, int(p.Rows), texRowLoops(int(p.Cols), 2)), s, p, b)
		}
		return plain(d, g, s, p, b)
	}
}
