package tensor

// SetAttentionKernel forces the attention kernels for tests and benchmarks:
// "shared" the shared-memory ones, "texel" the texel ones wherever their
// layout allows, "" the device's choice. It returns the previous setting.
func SetAttentionKernel(k string) (prev string) {
	prev, attnKernel = attnKernel, k
	return prev
}
