package tensor

import (
	"github.com/vkamp/vkamp/tensor/internal/kernels"
	"github.com/vkamp/vkamp/vk"
)

// EwiseSweep is the fp32 elements one pass of a CPU driver's capped
// elementwise grid covers (ewiseGrid): four per invocation.
func EwiseSweep(d *vk.Device) int { return cpuEwiseGroups * int(kernels.LocalSize(d)) * 4 }
