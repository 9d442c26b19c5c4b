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

// ArenaStats is Device.arenaStats: pieces given out by the slots' command
// arenas, their rewinds, and the slots whose arena is off.
func ArenaStats(d *Device) (pieces, rewinds uint64, off int) { return d.arenaStats() }

// ArenaCheck runs the command arena's own check (arena.c) and returns the
// number of the first expectation that failed, or 0.
func ArenaCheck() int { return arenaCheck() }
