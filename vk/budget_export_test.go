//go:build cgo

package vk

// SetHeapSize makes heap i of d look size bytes large to its allocator, for
// tests on drivers that fill every allocation, where filling the real heap
// would take gigabytes of host memory.
func SetHeapSize(d *Device, i int, size uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.heapSize[i] = size
}
