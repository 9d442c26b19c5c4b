//go:build cgo

package vk

/*
#include "shim.h"
*/
import "C"

// Flush and Reached let a goroutine wait for a point of the recorded work
// without holding the device's lock while the device runs, so that another
// goroutine keeps recording meanwhile (dist's overlapped gradient buckets):
// Read and Wait hold the lock for the whole wait.

// Flush submits the recorded work without waiting, as Sync, so that the
// device starts on it while the host records on, and returns a mark of it
// for Reached. Like a full batch, it may make the next recording wait for
// a free command buffer (Stats.Stalls).
func (d *Device) Flush() (uint64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return 0, err
	}
	if err := d.submit(); err != nil {
		return 0, err
	}
	if d.cur != nil { // an empty batch stays open: nothing of it was recorded
		return d.cur.serial - 1, nil
	}
	return d.lastSerial, nil
}

// Reached reports, without blocking, whether the device has finished the
// work up to mark (from Flush). It collects the finished batches as a wait
// does (each is one of Stats.Waits), and returns the failure of one.
func (d *Device) Reached(mark uint64) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return false, err
	}
	for mark > d.completed {
		var oldest *slot
		for _, s := range d.slots {
			if s.submitted && (oldest == nil || s.serial < oldest.serial) {
				oldest = s
			}
		}
		if oldest == nil || oldest.serial > mark {
			// Nothing submitted up to mark is left unfinished.
			d.completed = max(d.completed, mark)
			break
		}
		switch r := C.vkamp_fence_status(d.dev, &oldest.c); r {
		case C.VK_NOT_READY:
			return false, nil
		case C.VK_SUCCESS:
			if err := d.retire(oldest, retireWait); err != nil {
				return false, err
			}
		default:
			return false, d.fail(check(int32(r), "fence status of batch %d", oldest.serial))
		}
	}
	return true, nil
}
