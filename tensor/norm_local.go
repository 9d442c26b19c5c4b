package tensor

import (
	"math/bits"

	"github.com/vkamp/vkamp/vk"
)

// cpuRowLocal is the workgroup of a layer-norm row on a CPU device: one
// SIMD row of lavapipe's 256-bit lanes.
const cpuRowLocal = 8

// normLocal is the workgroup size of the layer-norm kernels (one workgroup
// per row, rowGrid). On a CPU device (lavapipe, SwiftShader) it is
// cpuRowLocal where it can be: there a barrier switches every invocation
// of the workgroup in turn, so a workgroup of 256 spent its time in the
// reduction trees' barriers (LayerNorm over rows of 1024: 6x faster at 8 on
// lavapipe, 150x on SwiftShader). A narrower workgroup loops more in each
// invocation, so it widens again where lavapipe's loop limit comes near.
func normLocal(d *vk.Device, rows, cols int) uint32 {
	local := rowLocal(d, cols)
	if d.Info().Type != vk.TypeCPU {
		return local
	}
	perGroup := ceilDiv(max(rows, 1), 65535) // rows each workgroup runs (rowGrid)
	for n := uint32(cpuRowLocal); n < local; n *= 2 {
		// Three passes over the row, and two trees, per row.
		if perGroup*(3*ceilDiv(cols, int(n))+2*bits.Len32(n)+4) <= lavapipeLoops/2 {
			return n
		}
	}
	return local
}
