package tensor

import "github.com/vkamp/vkamp/vk"

// MatMulKernel is the kernel MatMul would run for these operands on d, for
// tests that check which variant VKAMP_MATMUL selects.
func MatMulKernel(d *vk.Device, a, b *Tensor, o MatMulOpts) (string, error) {
	_, pl, err := mmChoose(d.Info(), a, b, mmShapes(a, b, o))
	return pl.kernel, err
}

// MatMulSpec is the specialization of the kernel MatMul would run.
func MatMulSpec(d *vk.Device, a, b *Tensor, o MatMulOpts) (map[uint32]uint32, error) {
	_, pl, err := mmChoose(d.Info(), a, b, mmShapes(a, b, o))
	return pl.spec, err
}
