package tensor

import (
	"github.com/vkamp/vkamp/vk"
)

// MatMulKernel is MatMulKernelName with d, for tests.
func MatMulKernel(d *vk.Device, a, b *Tensor, o MatMulOpts) (string, error) {
	return MatMulKernelName(a, b, o)
}

// MatMulWideStores reports whether MatMul's epilogue would store these
// operands' result as 64-bit words (matmul_tex's WIDE_OUT).
func MatMulWideStores(d *vk.Device, a, b *Tensor, o MatMulOpts) (bool, error) {
	g, pl, err := mmChoose(d.Info(), a, b, mmShapes(a, b, o))
	return mmWideOut(pl, g, d, o.Out) != 0, err
}

// MatMulTileOf is the tile of the plan MatMul would run (its tunable
// constants, as a tuning file stores them).
func MatMulTileOf(d *vk.Device, a, b *Tensor, o MatMulOpts) (MatMulTile, error) {
	_, pl, err := mmChoose(d.Info(), a, b, mmShapes(a, b, o))
	return mmTileOf(pl), err
}

// MatMulCandidates are the tiles the autotuner tries for kernel on info.
func MatMulCandidates(info vk.Info, kernel string) []MatMulTile {
	var ts []MatMulTile
	for k, name := range mmKernelNames {
		if name == kernel {
			for _, c := range mmCandidates(info, mmKind(k)) {
				ts = append(ts, mmTileOf(mmPlan{kind: mmKind(k), tile: c}))
			}
		}
	}
	return ts
}

// MatMulTuneFile is where MatMul looks for the tuning of info's device under
// dir.
func MatMulTuneFile(info vk.Info, dir string) string { return mmTuneFile(info, dir) }

// FillWords sets every 32-bit word of t's memory to word with a buffer fill
// (no kernel binds t), for tests of tensors over the device's binding range.
func FillWords(t *Tensor, word uint32) error {
	if t.err != nil {
		return t.err
	}
	return t.dev.Fill(t.buf, 0, t.buf.Size(), word)
}
