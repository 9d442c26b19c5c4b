//go:build cgo

package vk

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// A finished batch's pools are reset (lavapipe took some 100 us for a
// training step's commands before the command arena, arena.c, made freeing
// them a count) by a resetter goroutine of low priority, off the
// path that records. begin takes the reset over if the resetter has not
// started it, and waits only for one under way, so that a busy host records
// no slower than it would resetting inline.

// Slot pool states (slot.pools).
const (
	poolsClean  int32 = iota // reset: ready for begin
	poolsQueued              // finished, waiting for the resetter
	poolsDirty               // recorded or failed to reset: begin resets them
)

// resetter resets the pools of queued slots on one OS thread.
type resetter struct {
	queue chan *slot
	done  chan struct{}
}

// startResetter starts the device's resetter; Open calls it, so that the
// goroutine lives exactly as long as the device (a caller counting
// goroutines around its own work sees none appear).
func (d *Device) startResetter() {
	d.resets = &resetter{queue: make(chan *slot, 2*numSlots), done: make(chan struct{})}
	go d.resets.run(d.dev)
}

// resetLater queues s's pools for the resetter.
func (d *Device) resetLater(s *slot) {
	s.pools.Store(poolsQueued)
	if d.resets == nil { // closed: begin would reset them
		return
	}
	select {
	case d.resets.queue <- s:
	default: // full: begin resets it
	}
}

func (r *resetter) run(dev C.VkDevice) {
	defer close(r.done)
	// The thread ends with the goroutine (still locked), so its lowered
	// priority goes with it.
	runtime.LockOSThread()
	lowerThreadPriority()
	for s := range r.queue {
		s.resetMu.Lock()
		if s.pools.CompareAndSwap(poolsQueued, poolsDirty) {
			if C.vkamp_reset_slot(dev, &s.c) == C.VK_SUCCESS {
				s.pools.Store(poolsClean)
			} // else begin tries again and reports it
		}
		s.resetMu.Unlock()
	}
}

// stop ends the resetter once it has done what is queued.
func (r *resetter) stop() {
	if r != nil {
		close(r.queue)
		<-r.done
	}
}

// claim readies s's pools for begin: it resets them here unless the
// resetter has done so, waiting for a reset under way.
func (d *Device) claim(s *slot) C.VkResult {
	s.pools.CompareAndSwap(poolsQueued, poolsDirty) // not started: take it over
	s.resetMu.Lock()
	defer s.resetMu.Unlock()
	if s.pools.Load() == poolsClean {
		return C.VK_SUCCESS
	}
	r := C.vkamp_reset_slot(d.dev, &s.c)
	if r == C.VK_SUCCESS {
		s.pools.Store(poolsClean)
	}
	return r
}

// slotReset is the part of a slot the resetter shares.
type slotReset struct {
	pools   atomic.Int32 // poolsClean, poolsQueued or poolsDirty
	resetMu sync.Mutex   // held while the pools are reset
}

// arenaStats sums the command arenas of d's slots (arena.c): the pieces of
// driver memory they gave out, their rewinds, and the slots whose arena was
// turned off because a piece outlived a pool reset.
func (d *Device) arenaStats() (pieces, rewinds uint64, off int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, s := range d.slots {
		var p, r C.uint64_t
		var o C.int
		s.resetMu.Lock()
		C.vkamp_arena_stats(s.c.arena, &p, &r, &o)
		s.resetMu.Unlock()
		pieces, rewinds, off = pieces+uint64(p), rewinds+uint64(r), off+int(o)
	}
	return pieces, rewinds, off
}

// arenaCheck runs the command arena's check without a driver (arena.c).
func arenaCheck() int { return int(C.vkamp_arena_check()) }
