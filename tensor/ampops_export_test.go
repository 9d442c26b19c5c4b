package tensor

import (
	"encoding/binary"

	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// OptChunk and UnscaleChunk are the elements of the largest chunk of d's
// optimizer tables and the words of the largest of its unscale tables
// (tableChunk).
func OptChunk(d *vk.Device) int     { return tableChunk(d, 1<<30, optChunk) }
func UnscaleChunk(d *vk.Device) int { return tableChunk(d, 1<<30, unscaleChunk) }

// SetTableChunks makes a CPU driver's block tables cut tensors as if it ran
// on cores cores, keeping perCore chunks per core at least, until the
// returned function restores them: tests make chunks longer than a GPU's
// from tensors of a few chunks.
func SetTableChunks(cores, perCore int) (restore func()) {
	was, wasPer := cpuCores, cpuChunksPerCore
	cpuCores, cpuChunksPerCore = cores, perCore
	return func() { cpuCores, cpuChunksPerCore = was, wasPer }
}

// InvScaleBits returns the state's inv_scale word, waiting for the device.
func (s *LossScale) InvScaleBits() (uint32, error) {
	raw, err := s.state.raw("LossScale.InvScaleBits")
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(raw[4*wordInvScale:]), nil
}

// UnscaleWords runs unscale_check over x's words with a table of the given
// chunks (first word, element count, dtype code: 0 fp32, 1 fp16), which
// need not be aligned as the block tables' are; texels chooses the texel
// form, and reports false if it cannot serve x's device.
func (s *LossScale) UnscaleWords(x *Tensor, chunks [][3]uint32, found *Tensor, texels bool) (bool, error) {
	d := x.dev
	if texels && !texelsServe(d, x.buf) {
		return false, nil
	}
	var raw []byte
	for _, c := range chunks {
		raw = binary.LittleEndian.AppendUint32(raw, c[0])
		raw = binary.LittleEndian.AppendUint32(raw, c[1])
		raw = binary.LittleEndian.AppendUint32(raw, c[2])
		raw = binary.LittleEndian.AppendUint32(raw, 0)
	}
	tb, err := uploadTable(d, raw)
	if err != nil {
		return true, err
	}
	defer tb.Free()
	if err := d.Fill(found.buf, 0, 4, 0); err != nil {
		return true, err
	}
	g := [3]uint32{uint32(len(chunks)), 1, 1}
	push := kernels.UnscaleCheckPush{Nchunks: uint32(len(chunks))}
	if texels {
		err = kernels.UnscaleCheckTex(d, g, kernels.UnscaleCheckTexSpec{}, kernels.UnscaleCheckTexPush(push), kernels.UnscaleCheckTexBind{
			Data: x.buf, Table: tb, State: s.state.buf, Found: found.buf, DataTex: x.buf})
	} else {
		err = kernels.UnscaleCheck(d, g, kernels.UnscaleCheckSpec{}, push,
			kernels.UnscaleCheckBind{Data: x.buf, Table: tb, State: s.state.buf, Found: found.buf})
	}
	if err != nil {
		return true, err
	}
	return true, d.Wait()
}
