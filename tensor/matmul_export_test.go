package tensor

import "github.com/vkamp/vkamp/vk"

// MatMulKernel is the kernel MatMul would run for these operands on d, for
// tests that check which variant VKAMP_MATMUL selects.
func MatMulKernel(d *vk.Device, a, b *Tensor, o MatMulOpts) (string, error) {
	kind, err := mmKindFor(d.Info())
	if err != nil {
		return "", err
	}
	g := mmShapes(a, b, o)
	g.aMode = mmMode(a.dtype, kind, g.transA, g.m, g.k)
	g.bMode = mmMode(b.dtype, kind, !g.transB, g.n, g.k)
	return mmPlanFor(d.Info(), kind, g).kernel, nil
}
