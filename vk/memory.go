//go:build cgo

package vk

/*
#include <string.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sort"
	"unsafe"
)

// Memory is sub-allocated: a few large blocks, each one VkDeviceMemory with
// one VkBuffer over all of it, are cut into Buffers. Drivers allow as few as
// 4096 allocations (SwiftShader), and a training step has many small tensors.

const (
	defaultBlockSize   = 64 << 20
	defaultStagingSize = 16 << 20
)

const (
	memDeviceLocal  = C.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
	memHostVisible  = C.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
	memHostCoherent = C.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
	memHostCached   = C.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
)

type span struct{ lo, hi uint64 } // [lo, hi) bytes

type block struct {
	id        int
	buf       C.VkBuffer
	mem       C.VkDeviceMemory
	mapped    unsafe.Pointer // nil unless host-visible
	size      uint64
	heap      int                 // the memory heap it comes from
	bytes     uint64              // the memory it takes from the heap: size, plus the driver's padding
	free      []span              // sorted, coalesced
	live      int                 // Buffers cut from this block
	dedicated bool                // holds one large Buffer and goes when it goes
	gone      bool                // destroyed
	whole     *Buffer             // the buffer spanning the block, made by Block
	views     map[span]*texelView // uniform texel views of buffers cut from the block
	// Use tracking for dispatches that bind the whole block.
	lastUse, lastWrite uint64
}

// Buffer is a range of device memory. Its methods are safe for concurrent use;
// they go through the Device's lock. A Buffer must not be used after Free.
type Buffer struct {
	d          *Device
	blk        *block
	off        uint64 // within blk
	size       uint64 // as asked for
	alloc      uint64 // as reserved: size rounded up to the offset alignment
	freed      bool
	lastUse    uint64  // serial of the last batch that used it on the device
	lastWrite  uint64  // serial of the last batch that wrote it on the device
	parent     *Buffer // for a slice: the buffer that owns the memory
	wholeBlock bool    // spans its block: made by Block, never freed
	born       uint64  // Device.allocs when it was made (a trace's temporaries are those born in it)
	traced     uint64  // the id of the last trace that bound it (its root's, for a slice)
	tempID     uint64  // its number among that trace's temporaries
	heldIn     uint64  // the id of the trace that holds it, freed while traced
}

// root is the buffer that owns b's memory; it carries the use tracking of
// all its slices, so that a host read of one sees device writes to another.
func (b *Buffer) root() *Buffer {
	if b.parent != nil {
		return b.parent
	}
	return b
}

// dead reports whether b or the buffer it is a slice of was freed.
func (b *Buffer) dead() bool { return b.freed || b.root().freed || b.blk.gone }

// busy reports the serials of the last device use and write of b's memory,
// through b, its root or its whole block.
func (b *Buffer) busy() (use, write uint64) {
	r := b.root()
	return max(r.lastUse, b.blk.lastUse), max(r.lastWrite, b.blk.lastWrite)
}

// Block returns a buffer spanning the whole memory block that b was cut
// from, and b's byte offset in it. A kernel can bind it once to reach many
// buffers, by offset (as the gradient scaler does for all gradients at
// once). Device work through it is tracked for every buffer in the block.
// It must not be freed; it lives as long as the block.
func (b *Buffer) Block() (*Buffer, int64, error) {
	if b != nil {
		b.d.mu.Lock()
		defer b.d.mu.Unlock()
	}
	if err := b.usable(0, 0, "block of buffer"); err != nil {
		return nil, 0, err
	}
	blk := b.blk
	if blk.whole == nil {
		blk.whole = &Buffer{d: b.d, blk: blk, size: blk.size, alloc: blk.size, wholeBlock: true}
	}
	return blk.whole, int64(b.off), nil
}

// Slice returns a view of n bytes of b at byte offset off, sharing its
// memory, for binding part of a buffer (such as one tensor in an arena) to a
// kernel. off must be a multiple of the device's storage-buffer offset
// alignment (Device.Alignment). The slice is valid while b is; freeing the
// slice releases nothing.
func (b *Buffer) Slice(off, n int64) (*Buffer, error) {
	if b != nil {
		b.d.mu.Lock()
		defer b.d.mu.Unlock()
	}
	if err := b.usable(off, n, "slice buffer"); err != nil {
		return nil, err
	}
	if n <= 0 || uint64(off)%b.d.align != 0 {
		return nil, fmt.Errorf("vk: slice buffer: %w: offset %d must be a multiple of %d and size %d positive",
			ErrInvalidArgument, off, b.d.align, n)
	}
	r := b.root()
	start := b.off + uint64(off)
	alloc := min(roundUp(uint64(n), 4), r.off+r.alloc-start)
	return &Buffer{d: b.d, blk: b.blk, off: start, size: uint64(n), alloc: alloc, parent: r}, nil
}

// Alignment is the byte alignment of buffer offsets that can be bound to a
// kernel: every Buffer starts at one, and Slice offsets must be multiples.
func (d *Device) Alignment() int64 { return int64(d.align) }

// Size returns the buffer's size in bytes.
func (b *Buffer) Size() int64 { return int64(b.size) }

func roundUp(n, a uint64) uint64 { return (n + a - 1) / a * a }

// Alloc returns a new buffer of size bytes, whose contents are undefined.
func (d *Device) Alloc(size int64) (*Buffer, error) {
	b := new(Buffer)
	if err := d.AllocIn(b, size); err != nil {
		return nil, err
	}
	return b, nil
}

// AllocIn is Alloc into b, a zero Buffer that the caller owns, typically a
// field of its own object: a tensor and its memory are then one Go
// allocation, not two. b must not be copied or reused afterwards; Free
// releases its memory as it does an allocated Buffer's. On error b is left
// zero.
func (d *Device) AllocIn(b *Buffer, size int64) error {
	if b == nil || b.d != nil {
		return fmt.Errorf("vk: allocate %d bytes: %w: the buffer is nil or already in use", size, ErrInvalidArgument)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return err
	}
	if size <= 0 {
		return fmt.Errorf("vk: allocate %d bytes: %w: size must be positive", size, ErrInvalidArgument)
	}
	if limit := d.maxAlloc(); uint64(size) > limit {
		return fmt.Errorf("vk: allocate %d bytes: %w: the device allows at most %d in one allocation",
			size, ErrOutOfDeviceMemory, limit)
	}
	n := roundUp(uint64(size), d.align)
	if n > d.blockSize/2 {
		blk := d.takeSpare(n)
		if blk == nil {
			var err error
			if blk, err = d.newBlock(n, true); err != nil {
				return fmt.Errorf("vk: allocate %d bytes: %w", size, err)
			}
		}
		blk.free = nil
		blk.live = 1
		d.track(b, blk, 0, uint64(size), n)
		return nil
	}
	for _, blk := range d.blocks {
		if off, ok := blk.take(n); ok {
			d.track(b, blk, off, uint64(size), n)
			return nil
		}
	}
	blk, err := d.newBlock(d.blockSize, false)
	if err != nil {
		return fmt.Errorf("vk: allocate %d bytes: %w", size, err)
	}
	off, _ := blk.take(n)
	d.track(b, blk, off, uint64(size), n)
	return nil
}

// track makes b the buffer of n bytes at off in blk, size of them asked for.
func (d *Device) track(b *Buffer, blk *block, off, size, n uint64) {
	d.allocs++
	*b = Buffer{d: d, blk: blk, off: off, size: size, alloc: n, born: d.allocs}
	d.stats.LiveBuffers++
	d.stats.BufferBytes += n
}

func (d *Device) maxAlloc() uint64 {
	limit := d.info.MaxMemoryAllocationSize
	if limit == 0 {
		limit = 1 << 30
	}
	var heap uint64
	for _, h := range d.info.Heaps {
		heap = max(heap, h.Size)
	}
	return min(limit, heap)
}

// take reserves n bytes first-fit; offsets stay aligned because every size is
// a multiple of the alignment.
func (b *block) take(n uint64) (uint64, bool) {
	for i, s := range b.free {
		if s.hi-s.lo < n {
			continue
		}
		off := s.lo
		if s.hi-s.lo == n {
			b.free = append(b.free[:i], b.free[i+1:]...)
		} else {
			b.free[i].lo += n
		}
		b.live++
		return off, true
	}
	return 0, false
}

// give returns [off, off+n) to the free list, merging neighbours.
func (b *block) give(off, n uint64) {
	i := sort.Search(len(b.free), func(i int) bool { return b.free[i].lo > off })
	b.free = append(b.free, span{})
	copy(b.free[i+1:], b.free[i:])
	b.free[i] = span{off, off + n}
	if i+1 < len(b.free) && b.free[i].hi == b.free[i+1].lo {
		b.free[i].hi = b.free[i+1].hi
		b.free = append(b.free[:i+1], b.free[i+2:]...)
	}
	if i > 0 && b.free[i-1].hi == b.free[i].lo {
		b.free[i-1].hi = b.free[i].hi
		b.free = append(b.free[:i], b.free[i+1:]...)
	}
	b.live--
}

func (d *Device) newBlock(size uint64, dedicated bool) (*block, error) {
	if d.info.MaxMemoryAllocationCount > 0 && uint64(d.liveBlocks()) >= uint64(d.info.MaxMemoryAllocationCount) {
		return nil, fmt.Errorf("%w: device allows %d memory allocations", ErrTooManyObjects, d.info.MaxMemoryAllocationCount)
	}
	required, preferred := C.uint32_t(memDeviceLocal), C.uint32_t(0)
	if d.info.drv.unifiedMemory {
		required, preferred = memHostVisible|memHostCoherent, memDeviceLocal
	}
	blk, err := d.createBlock(size, required, preferred)
	if errors.Is(err, ErrOutOfDeviceMemory) && d.makeRoom() {
		blk, err = d.createBlock(size, required, preferred) // once more, after freeing unused blocks
	}
	if err != nil {
		return nil, err
	}
	blk.dedicated = dedicated
	d.blocks = append(d.blocks, blk)
	return blk, nil
}

func (d *Device) createBlock(size uint64, required, preferred C.uint32_t) (*block, error) {
	blk := &block{id: d.nextBlockID, size: size, free: []span{{0, size}}}
	d.nextBlockID++
	var mapped unsafe.Pointer
	var typeIndex, heap C.uint32_t
	var bytes C.uint64_t
	var refused C.int
	var r C.VkResult
	if d.faults.hit(&d.faults.AllocN, &d.faults.allocs) {
		r = C.VK_ERROR_OUT_OF_DEVICE_MEMORY
	} else {
		room := d.heapRoom()
		r = C.vkamp_create_block(d.dev, d.info.drv.physical, C.uint64_t(size), ^C.uint32_t(0), required, preferred,
			&room[0], &blk.buf, &blk.mem, &mapped, &typeIndex, &heap, &bytes, &refused)
	}
	if refused != 0 {
		return nil, d.overHeap(int(heap), uint64(bytes))
	}
	if err := check(int32(r), "allocate a %d-byte memory block", size); err != nil {
		if limit := d.info.MaxMemoryAllocationSize; limit > 0 && uint64(bytes) > limit {
			err = fmt.Errorf("%w (the driver asks for %d bytes for it, over its limit of %d in one allocation)", err, bytes, limit)
		}
		return nil, err
	}
	blk.mapped = mapped
	blk.heap, blk.bytes = int(heap), uint64(bytes)
	d.countBlock(blk, 1)
	d.stats.MemoryBlocks++
	d.stats.DeviceBytes += size
	d.stats.Allocations++
	return blk, nil
}

func (d *Device) liveBlocks() int {
	n := len(d.blocks)
	if d.staging != nil {
		n++
	}
	return n
}

func (d *Device) destroyBlock(blk *block) {
	d.destroyViews(blk)
	C.vkamp_destroy_block(d.dev, blk.buf, blk.mem)
	d.countBlock(blk, -1)
	blk.gone = true
	d.frees++
	d.stats.MemoryBlocks--
	d.stats.DeviceBytes -= blk.size
	for i, b := range d.blocks {
		if b == blk {
			d.blocks = append(d.blocks[:i], d.blocks[i+1:]...)
			break
		}
	}
}

// texelView is a uniform texel view of one byte range of a block, kept for
// reuse: training cuts the same ranges step after step, so views stop being
// made after the first steps.
type texelView struct {
	v       C.VkBufferView
	lastUse uint64 // serial of the last batch that bound it
	pins    int    // graphs that bind it: kept while any lives
}

// maxViewsPerBlock bounds a block's cached views; past it, views that no
// pending work uses are destroyed.
const maxViewsPerBlock = 256

func (d *Device) destroyViews(blk *block) {
	for _, tv := range blk.views {
		C.vkamp_destroy_view(d.dev, tv.v)
	}
	blk.views = nil
}

// TexelsFit reports whether b can be bound as Texels: its size in 16-byte
// texels must be within the device's MaxTexelBufferElements.
func (b *Buffer) TexelsFit() bool {
	return b != nil && b.alloc/16 <= uint64(b.d.info.MaxTexelBufferElements)
}

// view returns a uniform texel view of exactly b's memory (its size rounded
// up to whole texels), for a batch with the given serial. A view of the
// whole block would be simpler, but synchronization validation would then
// see every dispatch read all of the block, including what it writes.
func (d *Device) view(b *Buffer, serial uint64) (C.VkBufferView, error) {
	blk := b.blk
	key := span{b.off, b.off + roundUp(b.size, 16)}
	if key.hi > blk.size || b.off%16 != 0 {
		return 0, fmt.Errorf("%w: texels need a buffer on a 16-byte boundary (offset %d, size %d)", ErrInvalidArgument, b.off, b.size)
	}
	if n := (key.hi - key.lo) / 16; n > uint64(d.info.MaxTexelBufferElements) {
		return 0, fmt.Errorf("%w: a %d-byte buffer holds %d texels, the device allows %d in a texel buffer",
			ErrInvalidArgument, b.size, n, d.info.MaxTexelBufferElements)
	}
	if tv, ok := blk.views[key]; ok {
		tv.lastUse = serial
		if d.capture != nil {
			d.capture.pin(tv)
		}
		return tv.v, nil
	}
	if len(blk.views) >= maxViewsPerBlock {
		for k, tv := range blk.views {
			if tv.lastUse <= d.completed && tv.pins == 0 {
				C.vkamp_destroy_view(d.dev, tv.v)
				delete(blk.views, k)
			}
		}
	}
	var v C.VkBufferView
	r := C.vkamp_create_view(d.dev, blk.buf, C.uint64_t(key.lo), C.uint64_t(key.hi-key.lo), &v)
	if err := check(int32(r), "create a texel view"); err != nil {
		return 0, err
	}
	if blk.views == nil {
		blk.views = map[span]*texelView{}
	}
	tv := &texelView{v: v, lastUse: serial}
	blk.views[key] = tv
	if d.capture != nil {
		d.capture.pin(tv)
	}
	d.stats.TexelViews++
	return v, nil
}

// Free releases the buffer. Work already recorded that uses it still runs:
// its memory is reused only after that work completes. Free is idempotent and
// safe after the device has closed.
func (b *Buffer) Free() error {
	if b == nil {
		return nil
	}
	d := b.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if b.freed || b.wholeBlock {
		return nil
	}
	if d.capture != nil && d.capture.hold(b) {
		return nil // freed when the graph closes
	}
	if d.trace != nil && d.trace.hold(b) {
		return nil // freed when the trace is recorded or released
	}
	b.freed = true
	d.frees++
	if b.parent != nil {
		return nil // the parent owns the memory
	}
	d.stats.LiveBuffers--
	d.stats.BufferBytes -= b.alloc
	if d.closed {
		return nil
	}
	if use, _ := b.busy(); use > d.completed {
		d.pendingFree = append(d.pendingFree, pendingFree{b.blk, b.off, b.alloc, use})
		return nil
	}
	d.release(b.blk, b.off, b.alloc)
	return nil
}

// Close is Free, so that a Buffer is an io.Closer.
func (b *Buffer) Close() error { return b.Free() }

type pendingFree struct {
	blk    *block
	off, n uint64
	serial uint64
}

func (d *Device) release(blk *block, off, n uint64) {
	if blk.dedicated {
		// Keep a few freed large blocks: a training step that makes and
		// frees the same large tensors every step then allocates nothing.
		blk.live = 0
		d.spare = append(d.spare, blk)
		if len(d.spare) > maxSpare {
			d.destroyBlock(d.spare[0])
			d.spare = d.spare[1:]
		}
		return
	}
	blk.give(off, n)
}

// maxSpare is how many freed dedicated blocks are kept for reuse.
const maxSpare = 4

// takeSpare returns a kept dedicated block that fits n bytes without
// wasting more than half of it.
func (d *Device) takeSpare(n uint64) *block {
	for i, blk := range d.spare {
		if blk.size >= n && blk.size <= 2*n {
			d.spare = append(d.spare[:i], d.spare[i+1:]...)
			return blk
		}
	}
	return nil
}

// trim destroys the blocks that hold no buffer, to make room after the
// driver ran out of memory.
func (d *Device) trim() int {
	freed := 0
	for _, blk := range d.spare {
		d.destroyBlock(blk)
		freed++
	}
	d.spare = nil
	for _, blk := range append([]*block(nil), d.blocks...) {
		if blk.live == 0 && !blk.dedicated && blk.whole == nil {
			d.destroyBlock(blk)
			freed++
		}
	}
	return freed
}

// releaseCompleted frees the ranges whose last use has completed.
func (d *Device) releaseCompleted() {
	keep := d.pendingFree[:0]
	for _, p := range d.pendingFree {
		if p.serial <= d.completed {
			d.release(p.blk, p.off, p.n)
		} else {
			keep = append(keep, p)
		}
	}
	d.pendingFree = keep
}

func (b *Buffer) usable(off, n int64, what string) error {
	if b == nil {
		return fmt.Errorf("vk: %s: %w: nil buffer", what, ErrInvalidArgument)
	}
	if b.dead() {
		return fmt.Errorf("vk: %s: %w: buffer was freed", what, ErrInvalidArgument)
	}
	if err := b.d.usable(); err != nil {
		return err
	}
	if off < 0 || n < 0 || uint64(off)+uint64(n) > b.size {
		return fmt.Errorf("vk: %s: %w: range [%d, %d) outside a %d-byte buffer", what, ErrInvalidArgument, off, off+n, b.size)
	}
	return nil
}

// Write copies data into the buffer at byte offset off. It never waits for
// the device: memory the device may still be using is written through the
// staging ring, in order with the recorded work.
func (b *Buffer) Write(off int64, data []byte) error {
	if b != nil {
		b.d.mu.Lock()
		defer b.d.mu.Unlock()
	}
	if err := b.usable(off, int64(len(data)), "write buffer"); err != nil {
		return err
	}
	if b.d.capture != nil {
		return b.d.capture.refuse(fmt.Errorf("vk: write buffer: %w: a host write would not be replayed", ErrCapturing))
	}
	if t := b.d.trace; t != nil && t.binds(b) {
		return t.refuse(fmt.Errorf("vk: write buffer: %w: the traced step already used it, and its work has not run", ErrCapturing))
	}
	if len(data) == 0 {
		return nil
	}
	d := b.d
	if b.blk.mapped != nil && !d.opts.ForceStaging && b.idle() {
		copy(mappedBytes(b.blk.mapped, b.off+uint64(off), uint64(len(data))), data)
		return nil
	}
	return d.upload(b, uint64(off), data)
}

// WriteWith is Write of n bytes at off that fill writes in place: into the
// buffer's mapped memory when no recorded work uses it, else into a staging
// chunk that a recorded copy takes to the buffer (larger than the staging
// ring: into a temporary slice, then written). A batch gathered on the host
// so takes one pass over its bytes, not two. fill gets exactly n bytes,
// whose old contents are undefined, and must write all of them; it runs
// with the device locked and must not call it.
func (b *Buffer) WriteWith(off, n int64, fill func(dst []byte)) error {
	if b != nil {
		b.d.mu.Lock()
		defer b.d.mu.Unlock()
	}
	if err := b.usable(off, n, "write buffer"); err != nil {
		return err
	}
	if b.d.capture != nil {
		return b.d.capture.refuse(fmt.Errorf("vk: write buffer: %w: a host write would not be replayed", ErrCapturing))
	}
	if t := b.d.trace; t != nil && t.binds(b) {
		return t.refuse(fmt.Errorf("vk: write buffer: %w: the traced step already used it, and its work has not run", ErrCapturing))
	}
	if n == 0 {
		return nil
	}
	d := b.d
	switch {
	case b.blk.mapped != nil && !d.opts.ForceStaging && b.idle():
		fill(mappedBytes(b.blk.mapped, b.off+uint64(off), uint64(n)))
		return nil
	case uint64(n) <= d.stagingSize:
		o, err := d.reserve(uint64(n))
		if err != nil {
			return err
		}
		fill(mappedBytes(d.staging.blk.mapped, o, uint64(n)))
		return d.uploadChunk(b, uint64(off), o, uint64(n))
	}
	data := make([]byte, n)
	fill(data)
	return d.upload(b, uint64(off), data)
}

// Read copies the buffer's bytes at offset off into data, after waiting for
// any recorded work that writes the buffer.
func (b *Buffer) Read(off int64, data []byte) error {
	if b != nil {
		b.d.mu.Lock()
		defer b.d.mu.Unlock()
	}
	if err := b.usable(off, int64(len(data)), "read buffer"); err != nil {
		return err
	}
	if b.d.capture != nil {
		return b.d.capture.refuse(fmt.Errorf("vk: read buffer: %w: captured work has not run", ErrCapturing))
	}
	if t := b.d.trace; t != nil && t.binds(b) {
		return t.refuse(fmt.Errorf("vk: read buffer: %w: the traced step already used it, and its work has not run", ErrCapturing))
	}
	if len(data) == 0 {
		return nil
	}
	d := b.d
	if b.blk.mapped != nil && !d.opts.ForceStaging {
		_, w := b.busy()
		if err := d.waitSerial(w); err != nil {
			return err
		}
		copy(data, mappedBytes(b.blk.mapped, b.off+uint64(off), uint64(len(data))))
		return nil
	}
	return d.download(b, uint64(off), data)
}

// idle reports whether no recorded device work uses b's memory.
func (b *Buffer) idle() bool {
	use, _ := b.busy()
	return use <= b.d.completed
}
