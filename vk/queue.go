//go:build cgo

package vk

/*
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Work is recorded into the command buffer of the current batch slot and
// submitted when the batch is full, on Sync, or when the host must read.
// Each batch has a serial; completed is the last serial the host has seen
// finish. Slots are reused round-robin once their fence has signalled.

const (
	defaultBatchSize = 256 // dispatches per submission
	maxBindings      = C.VKAMP_MAX_BINDINGS
	maxPush          = C.VKAMP_MAX_PUSH
	maxSpec          = C.VKAMP_MAX_SPEC
	numSlots         = 3
)

// scratch is what Dispatch fills per launch, kept on the Device (under its
// lock) so that recording allocates nothing.
type scratch struct {
	args                C.vkamp_dispatch_args
	reads, writes       []access
	readBufs, writeBufs []*Buffer
}

type slot struct {
	c          C.vkamp_slot
	serial     uint64 // 0 when idle
	recording  bool
	submitted  bool
	commands   int
	dispatches int
	timed      []string // kernel name per timestamp pair

	slotReset // its pools' reset (reset.go)
}

// retireKind says why a finished batch is collected.
type retireKind int

const (
	retireWait  retireKind = iota // the host waits for a result (Stats.Waits)
	retireStall                   // the host waits for a free slot (Stats.Stalls)
)

// hazards remembers the byte ranges read and written since the last barrier.
// A new command that reads what is unsynced-written, or writes what is
// unsynced-read or -written, needs a barrier first; anything else may overlap.
type hazards struct{ reads, writes []access }

type access struct {
	blk *block
	span
}

func overlaps(list []access, a access) bool {
	for _, x := range list {
		if x.blk == a.blk && x.lo < a.hi && a.lo < x.hi {
			return true
		}
	}
	return false
}

// need reports whether a command with these reads and writes must wait.
func (h *hazards) need(reads, writes []access) bool {
	for _, r := range reads {
		if overlaps(h.writes, r) {
			return true
		}
	}
	for _, w := range writes {
		if overlaps(h.writes, w) || overlaps(h.reads, w) {
			return true
		}
	}
	// Bound the bookkeeping for long runs of independent commands.
	return len(h.reads)+len(h.writes) > 512
}

func (h *hazards) add(reads, writes []access) {
	h.reads = append(h.reads, reads...)
	h.writes = append(h.writes, writes...)
}

func (h *hazards) clear() { h.reads, h.writes = h.reads[:0], h.writes[:0] }

// begin makes sure a batch is recording and returns it.
func (d *Device) begin() (*slot, error) {
	if d.cur != nil {
		return d.cur, nil
	}
	s := d.slots[d.nextSlot]
	if s.submitted {
		// Every command buffer is in flight: the host is ahead of the
		// device and waits for the oldest (a stall, not a read).
		if err := d.retire(s, retireStall); err != nil {
			return nil, err
		}
	}
	if err := check(int32(d.claim(s)), "reset command pool"); err != nil {
		return nil, d.fail(err)
	}
	d.nextSlot = (d.nextSlot + 1) % len(d.slots)
	s.pools.Store(poolsDirty)
	r := C.vkamp_begin(d.dev, &s.c, C.uint32_t(d.queries()))
	if err := check(int32(r), "begin command buffer"); err != nil {
		return nil, d.fail(err)
	}
	d.lastSerial++
	s.serial = d.lastSerial
	s.recording = true
	s.commands, s.dispatches = 0, 0
	s.timed = s.timed[:0]
	d.cur = s
	return s, nil
}

func (d *Device) queries() int {
	if d.timestamps {
		return 2 * d.batchSize
	}
	return 0
}

// barrierFor records a barrier if the new command depends on unsynced work.
func (d *Device) barrierFor(s *slot, reads, writes []access) {
	if d.needBarrier(reads, writes) {
		C.vkamp_cmd_barrier(&s.c)
	}
}

// needBarrier reports whether the new command depends on unsynced work and
// counts it as synced from here: the caller records the barrier next.
func (d *Device) needBarrier(reads, writes []access) bool {
	need := d.hz.need(reads, writes)
	if need {
		d.stats.Barriers++
		d.hz.clear()
	}
	d.hz.add(reads, writes)
	return need
}

// recorded updates the bookkeeping after a command and submits a full batch.
func (d *Device) recorded(s *slot, reads, writes []*Buffer) error {
	if d.capture != nil {
		d.capture.captured(reads, writes)
	}
	for _, b := range reads {
		b.markUse(s.serial, false)
	}
	for _, b := range writes {
		b.markUse(s.serial, true)
	}
	s.commands++
	if s.dispatches >= d.batchSize {
		return d.submit()
	}
	return nil
}

// submit sends the recording batch to the queue without waiting.
func (d *Device) submit() error {
	if d.capture != nil {
		return d.captureSubmit()
	}
	s := d.cur
	if s == nil || s.commands == 0 {
		return nil
	}
	C.vkamp_cmd_host_barrier(&s.c)
	d.cur = nil
	s.recording = false
	r := C.VkResult(C.VK_ERROR_DEVICE_LOST)
	if !d.faults.hit(&d.faults.SubmitN, &d.faults.submits) {
		r = C.vkamp_submit(d.queue, &s.c)
	}
	if err := check(int32(r), "submit %d commands", s.commands); err != nil {
		return d.fail(err)
	}
	s.submitted = true
	d.stats.Submits++
	return nil
}

// retire waits for a submitted slot and collects what it finished. Only a
// wait retires a slot, never a look at its fence in passing: the host's
// events (waits, frees) then do not depend on the device's timing, which
// the fault-injection tests count on. A stall is a wait for a free command buffer
// rather than for a result; the stalled begin resets the slot itself, any
// other retired slot is queued for the resetter (reset.go).
func (d *Device) retire(s *slot, how retireKind) error {
	if how == retireStall {
		d.stats.Stalls++
	} else {
		d.stats.Waits++
	}
	r := C.vkamp_wait(d.dev, &s.c, C.uint64_t(d.opts.waitTimeout()))
	if d.faults.hit(&d.faults.WaitN, &d.faults.waits) {
		r = C.VK_ERROR_DEVICE_LOST
	}
	if err := check(int32(r), "wait for batch %d", s.serial); err != nil {
		return d.fail(err)
	}
	s.submitted = false
	if how != retireStall {
		d.resetLater(s)
	}
	if len(s.timed) > 0 {
		ticks := make([]uint64, 2*len(s.timed))
		r := C.vkamp_query_results(d.dev, &s.c, C.uint32_t(len(ticks)), (*C.uint64_t)(unsafe.Pointer(&ticks[0])))
		if r == 0 {
			for i, name := range s.timed {
				kt := d.times[name]
				if kt == nil {
					kt = &KernelTime{Name: name}
					d.times[name] = kt
				}
				kt.Count++
				if ticks[2*i+1] > ticks[2*i] {
					kt.Nanoseconds += float64(ticks[2*i+1]-ticks[2*i]) * float64(d.info.TimestampPeriod)
				}
			}
		}
	}
	if s.serial > d.completed {
		d.completed = s.serial
	}
	d.releaseCompleted()
	return nil
}

// waitSerial returns once the batch with the given serial has completed.
func (d *Device) waitSerial(serial uint64) error {
	if serial <= d.completed {
		return nil
	}
	if d.cur != nil && d.cur.serial <= serial {
		if err := d.submit(); err != nil {
			return err
		}
	}
	for serial > d.completed {
		var oldest *slot
		for _, s := range d.slots {
			if s.submitted && (oldest == nil || s.serial < oldest.serial) {
				oldest = s
			}
		}
		if oldest == nil {
			// Only an empty batch was left: nothing of that serial ran.
			d.completed = serial
			break
		}
		if err := d.retire(oldest, retireWait); err != nil {
			return err
		}
	}
	return nil
}

// fail records an error that leaves the device unusable (device loss) so
// that every later call returns it.
func (d *Device) fail(err error) error {
	if d.err == nil && (isDeviceLost(err)) {
		d.err = err
	}
	return err
}

// Sync submits all recorded work without waiting for it.
func (d *Device) Sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return err
	}
	return d.submit()
}

// Wait submits all recorded work and waits until the device has finished it.
// A failure inside submitted work is returned here.
func (d *Device) Wait() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return err
	}
	return d.waitSerial(d.lastSerial)
}

// Dispatch records one kernel launch of groups workgroups, binding args to the
// kernel's bindings in order (each whole buffer) and push as its push
// constants. It returns without waiting; a barrier is recorded first only if
// the launch touches memory that earlier unsynced work wrote (or, for what it
// writes, read).
func (d *Device) Dispatch(k *Kernel, groups [3]uint32, push []byte, args ...*Buffer) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dispatchLocked(k, groups, push, args...)
}

// dispatchLocked is Dispatch with the device lock held.
func (d *Device) dispatchLocked(k *Kernel, groups [3]uint32, push []byte, args ...*Buffer) error {
	if err := d.usable(); err != nil {
		return err
	}
	if k == nil || k.d != d {
		return fmt.Errorf("vk: dispatch: %w: kernel is nil or from another device", ErrInvalidArgument)
	}
	if len(args) != len(k.access) {
		return fmt.Errorf("vk: dispatch %s: %w: %d buffers for %d bindings", k.name, ErrInvalidArgument, len(args), len(k.access))
	}
	if len(push) != k.pushSize {
		return fmt.Errorf("vk: dispatch %s: %w: %d bytes of push constants, want %d", k.name, ErrInvalidArgument, len(push), k.pushSize)
	}
	for i, g := range groups {
		if g == 0 || g > d.info.MaxWorkgroupCount[i] {
			return fmt.Errorf("vk: dispatch %s: %w: %d workgroups in dimension %d (device allows 1..%d)",
				k.name, ErrInvalidArgument, g, i, d.info.MaxWorkgroupCount[i])
		}
	}
	sc := &d.scratch
	a := &sc.args
	reads, writes := sc.reads[:0], sc.writes[:0]
	readBufs, writeBufs := sc.readBufs[:0], sc.writeBufs[:0]
	for i, b := range args {
		if b == nil || b.dead() || b.d != d {
			return fmt.Errorf("vk: dispatch %s: %w: binding %d is nil, freed or from another device", k.name, ErrInvalidArgument, i)
		}
		if k.access[i]&Texels == 0 && b.alloc > uint64(d.info.MaxStorageBufferRange) {
			return fmt.Errorf("vk: dispatch %s: %w: binding %d is %d bytes, over the device's maxStorageBufferRange %d",
				k.name, ErrInvalidArgument, i, b.alloc, d.info.MaxStorageBufferRange)
		}
		a.bufs[i], a.offs[i], a.ranges[i], a.views[i] = C.uint64_t(b.blk.buf), C.uint64_t(b.off), C.uint64_t(b.alloc), 0
		x := access{b.blk, span{b.off, b.off + b.alloc}}
		if k.access[i]&Read != 0 {
			reads = append(reads, x)
			readBufs = append(readBufs, b)
		}
		if k.access[i]&Write != 0 {
			writes = append(writes, x)
			writeBufs = append(writeBufs, b)
		}
	}
	// Keep the grown lists for the next launch; drop the buffers after it.
	sc.reads, sc.writes, sc.readBufs, sc.writeBufs = reads, writes, readBufs, writeBufs
	if d.trace != nil {
		clear(readBufs)
		clear(writeBufs)
		d.trace.dispatch(k, groups, push, args)
		return nil
	}
	s, err := d.begin()
	if err != nil {
		return err
	}
	for i, b := range args {
		if k.access[i]&Texels != 0 {
			v, err := d.view(b, s.serial)
			if err != nil {
				return fmt.Errorf("vk: dispatch %s: binding %d: %w", k.name, i, err)
			}
			a.views[i] = C.uint64_t(v)
		}
	}
	barrier := d.needBarrier(reads, writes) // recorded by vkamp_cmd_dispatch
	ts := C.int32_t(-1)
	if d.timestamps {
		ts = C.int32_t(2 * len(s.timed))
		s.timed = append(s.timed, k.name)
	}
	// Copied rather than passed: a Go pointer given to C would move every
	// caller's push block to the heap.
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&a.push[0])), maxPush), push)
	r := C.vkamp_cmd_dispatch(d.dev, &s.c, k.pipeline, k.layout, k.setLayout, C.uint32_t(len(args)),
		a, C.uint32_t(len(push)), C.uint32_t(groups[0]), C.uint32_t(groups[1]), C.uint32_t(groups[2]), ts, cbool(barrier))
	if r != C.VK_SUCCESS { // checked first: formatting's arguments would allocate
		return check(int32(r), "record dispatch %s", k.name)
	}
	s.dispatches++
	d.stats.Dispatches++
	d.stats.DescriptorSets++
	err = d.recorded(s, readBufs, writeBufs)
	clear(readBufs)
	clear(writeBufs)
	return err
}

// Copy records a copy of n bytes from src at srcOff to dst at dstOff.
func (d *Device) Copy(dst *Buffer, dstOff int64, src *Buffer, srcOff int64, n int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.copyLocked(dst, dstOff, src, srcOff, n)
}

// copyLocked is Copy with the device lock held.
func (d *Device) copyLocked(dst *Buffer, dstOff int64, src *Buffer, srcOff int64, n int64) error {
	if err := src.usable(srcOff, n, "copy source"); err != nil {
		return err
	}
	if err := dst.usable(dstOff, n, "copy destination"); err != nil {
		return err
	}
	if src.d != d || dst.d != d {
		return fmt.Errorf("vk: copy: %w: buffer from another device", ErrInvalidArgument)
	}
	if n == 0 {
		return nil
	}
	so, do := src.off+uint64(srcOff), dst.off+uint64(dstOff)
	if src.blk == dst.blk && so < do+uint64(n) && do < so+uint64(n) {
		return fmt.Errorf("vk: copy: %w: source and destination overlap", ErrInvalidArgument)
	}
	if d.trace != nil {
		d.trace.copyCmd(dst, dstOff, src, srcOff, n)
		return nil
	}
	s, err := d.begin()
	if err != nil {
		return err
	}
	d.barrierFor(s, []access{{src.blk, span{so, so + uint64(n)}}}, []access{{dst.blk, span{do, do + uint64(n)}}})
	C.vkamp_cmd_copy(&s.c, src.blk.buf, C.uint64_t(so), dst.blk.buf, C.uint64_t(do), C.uint64_t(n))
	d.stats.Copies++
	return d.recorded(s, []*Buffer{src}, []*Buffer{dst})
}

// Fill records setting n bytes of b at off to the repeated 32-bit value. off
// and n must be multiples of 4.
func (d *Device) Fill(b *Buffer, off, n int64, value uint32) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.fillLocked(b, off, n, value)
}

// fillLocked is Fill with the device lock held.
func (d *Device) fillLocked(b *Buffer, off, n int64, value uint32) error {
	if err := b.usable(off, n, "fill"); err != nil {
		return err
	}
	if b.d != d {
		return fmt.Errorf("vk: fill: %w: buffer from another device", ErrInvalidArgument)
	}
	if off%4 != 0 || n%4 != 0 {
		return fmt.Errorf("vk: fill: %w: offset %d and size %d must be multiples of 4", ErrInvalidArgument, off, n)
	}
	if n == 0 {
		return nil
	}
	if d.trace != nil {
		d.trace.fillCmd(b, off, n, value)
		return nil
	}
	s, err := d.begin()
	if err != nil {
		return err
	}
	o := b.off + uint64(off)
	d.barrierFor(s, nil, []access{{b.blk, span{o, o + uint64(n)}}})
	C.vkamp_cmd_fill(&s.c, b.blk.buf, C.uint64_t(o), C.uint64_t(n), C.uint32_t(value))
	d.stats.Copies++
	return d.recorded(s, nil, []*Buffer{b})
}

// markUse records that the batch with this serial uses (or writes) b.
func (b *Buffer) markUse(serial uint64, write bool) {
	if b.wholeBlock {
		b.blk.lastUse = serial
		if write {
			b.blk.lastWrite = serial
		}
		return
	}
	r := b.root()
	r.lastUse = serial
	if write {
		r.lastWrite = serial
	}
}
