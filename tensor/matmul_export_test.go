package tensor

import (
	"encoding/binary"

	"github.com/x448/float16"

	"github.com/vkamp/vkamp/vk"
)

// MatMulKernel is the kernel MatMul would run for these operands on d, for
// tests that check which variant VKAMP_MATMUL selects.
func MatMulKernel(d *vk.Device, a, b *Tensor, o MatMulOpts) (string, error) {
	_, pl, err := mmChoose(d.Info(), a, b, mmShapes(a, b, o))
	return pl.kind.String(), err
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

// BFloat16Bits returns a BFloat16 tensor holding the bfloat16 bits bits,
// uploaded as raw 16-bit words: bf16 has fp16's storage. (Until tensor
// uploads bf16 itself.)
func BFloat16Bits(d *vk.Device, bits []uint16, shape ...int) *Tensor {
	h := make([]float16.Float16, len(bits))
	for i, b := range bits {
		h[i] = float16.Frombits(b)
	}
	t := FromFloat16(d, h, shape...)
	t.dtype = BFloat16
	return t
}

// Bits16 waits for a 16-bit tensor's value and returns its raw elements.
func Bits16(t *Tensor) ([]uint16, error) {
	raw, err := t.raw("Bits16")
	if err != nil {
		return nil, err
	}
	out := make([]uint16, t.n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return out, nil
}

// MatMulBFloat16 is MatMul, its result allocated by newTestOut: a bf16
// result works before tensor.New makes bf16 tensors.
func MatMulBFloat16(a, b *Tensor, o MatMulOpts) *Tensor {
	m := mmCheck("MatMul", a, b, o)
	out := newTestOut(a.dev, o.Out, m.outShape, m.inputs()...)
	if out.err != nil {
		return out
	}
	g, pl, err := mmChoose(a.dev.Info(), a, b, m.g)
	if err != nil {
		out.fail(err)
		return out
	}
	m.g = g
	m.launch(out, pl)
	return out
}

// newTestOut is newOut, making a BFloat16 tensor as fp16 storage (the same
// bytes) relabelled: until tensor.New makes bf16 tensors itself.
func newTestOut(d *vk.Device, dt DType, shape []int, inputs ...*Tensor) *Tensor {
	if dt != BFloat16 {
		return newOut(d, dt, shape, inputs...)
	}
	out := newOut(d, Float16, shape, inputs...)
	out.dtype = BFloat16
	return out
}

// MatMulTuneFile is where MatMul looks for the tuning of info's device under
// dir.
func MatMulTuneFile(info vk.Info, dir string) string { return mmTuneFile(info, dir) }
