//go:build cgo

package vk

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
)

// Device memory is counted against each heap's size, and against
// VK_EXT_memory_budget where the device has it, before the driver is asked:
// software drivers hand out host memory far past the heap they report
// (lavapipe accepted 40 GiB on its 2 GiB heap, and the process was then
// killed for memory instead of getting ErrOutOfDeviceMemory).

const maxHeaps = C.VK_MAX_MEMORY_HEAPS

// heapUse counts the bytes that vkamp's memory blocks hold in each heap of
// each physical device, over every Device of the process: Devices opened on
// one physical device share its heaps.
var heapUse = struct {
	sync.Mutex
	used map[C.VkPhysicalDevice]*[maxHeaps]uint64
}{used: map[C.VkPhysicalDevice]*[maxHeaps]uint64{}}

// openHeaps sets up d's view of its heaps.
func (d *Device) openHeaps() {
	heapUse.Lock()
	defer heapUse.Unlock()
	u := heapUse.used[d.info.drv.physical]
	if u == nil {
		u = new([maxHeaps]uint64)
		heapUse.used[d.info.drv.physical] = u
	}
	d.heapUsed = u
	for _, h := range d.info.Heaps {
		d.heapSize = append(d.heapSize, h.Size)
	}
}

// countBlock adds (or with sign -1 removes) blk's memory to its heap's use.
func (d *Device) countBlock(blk *block, sign int) {
	heapUse.Lock()
	defer heapUse.Unlock()
	if sign > 0 {
		d.heapUsed[blk.heap] += blk.bytes
	} else {
		d.heapUsed[blk.heap] -= blk.bytes
	}
}

// Memory returns, per memory heap of the device, its size, what vkamp may
// hold in it and what vkamp holds. Allocating a memory block that would take
// Used past Budget fails with ErrOutOfDeviceMemory, without asking the
// driver.
func (d *Device) Memory() []HeapUse {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.memory()
}

func (d *Device) memory() []HeapUse {
	n := len(d.heapSize)
	var budget, usage [maxHeaps]C.uint64_t
	withBudget := d.info.MemoryBudget && C.vkamp_heap_budget(d.info.drv.physical, C.uint32_t(n), &budget[0], &usage[0]) != 0
	heapUse.Lock()
	defer heapUse.Unlock()
	out := make([]HeapUse, n)
	for i := range out {
		u := HeapUse{Size: d.heapSize[i], Budget: d.heapSize[i], Used: d.heapUsed[i]}
		if withBudget {
			// heapBudget is what the whole process may hold, heapUsage what
			// it holds, vkamp's blocks included.
			left := uint64(0)
			if b, used := uint64(budget[i]), uint64(usage[i]); b > used {
				left = b - used
			}
			u.Budget = min(u.Budget, u.Used+left)
		}
		out[i] = u
	}
	return out
}

// heapRoom is how many more bytes each heap may give vkamp's blocks.
func (d *Device) heapRoom() [maxHeaps]C.uint64_t {
	var room [maxHeaps]C.uint64_t
	for i, u := range d.memory() {
		if u.Budget > u.Used {
			room[i] = C.uint64_t(u.Budget - u.Used)
		}
	}
	return room
}

// overHeap is the error for a block of n bytes that heap h has no room for.
func (d *Device) overHeap(h int, n uint64) error {
	u := d.memory()[h]
	limit := ""
	if u.Budget < u.Size {
		limit = fmt.Sprintf("; VK_EXT_memory_budget allows vkamp %d bytes (%s) of it", u.Budget, byteSize(u.Budget))
	}
	return fmt.Errorf("%w: %s has a %d-byte heap %d (%s), vkamp's memory blocks hold %d bytes (%s) of it%s, and a %d-byte block (%s) does not fit",
		ErrOutOfDeviceMemory, d.info.Name, u.Size, h, byteSize(u.Size), u.Used, byteSize(u.Used), limit, n, byteSize(n))
}

// makeRoom frees what it can after an allocation failed for want of memory:
// it waits for recorded work that still uses freed buffers, so that their
// memory comes back, then destroys the blocks that hold no buffer. It reports
// whether a block was destroyed.
func (d *Device) makeRoom() bool {
	if len(d.pendingFree) > 0 && d.waitSerial(d.lastSerial) != nil {
		return false
	}
	return d.trim() > 0
}

// byteSize writes n in binary units, as "2.0 GiB".
func byteSize(n uint64) string {
	const units = "KMGTPE"
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	v, i := float64(n)/1024, 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %ciB", v, units[i])
}
