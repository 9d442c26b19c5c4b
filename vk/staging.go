//go:build cgo

package vk

/*
#include <string.h>
#include "shim.h"
*/
import "C"

import "unsafe"

// mappedBytes is n bytes of mapped device memory at off. Host copies go
// through it in Go rather than a cgo memcpy, which would check the Go
// slice's memory on every call.
func mappedBytes(mapped unsafe.Pointer, off, n uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(mapped, off)), n)
}

// ring is the one persistently mapped staging buffer of a device. Uploads and
// downloads to memory the host cannot map go through it in chunks; a chunk
// is reused once the batch that copied it has completed.
type ring struct {
	blk  *block
	head uint64
	live []chunk // oldest first, in ring order
}

type chunk struct{ lo, hi, serial uint64 }

func (d *Device) stagingRing() (*ring, error) {
	if d.staging != nil {
		return d.staging, nil
	}
	blk, err := d.createBlock(d.stagingSize, memHostVisible|memHostCoherent, memHostCached)
	if err != nil {
		return nil, err
	}
	d.staging = &ring{blk: blk}
	return d.staging, nil
}

// reserve finds n free bytes in the ring, waiting for old chunks if needed.
func (d *Device) reserve(n uint64) (uint64, error) {
	r, err := d.stagingRing()
	if err != nil {
		return 0, err
	}
	if r.head+n > r.blk.size {
		r.head = 0
	}
	// Any in-flight chunk may overlap, not only the oldest: after a wrap the
	// oldest can lie past the new range while a younger one lies inside it.
	for _, c := range r.live {
		if c.serial > d.completed && c.lo < r.head+n && r.head < c.hi {
			if err := d.waitSerial(c.serial); err != nil {
				return 0, err
			}
		}
	}
	// Chunks are appended in serial order, so the completed ones lead.
	for len(r.live) > 0 && r.live[0].serial <= d.completed {
		r.live = r.live[1:]
	}
	off := r.head
	r.head += roundUp(n, 64)
	return off, nil
}

func (d *Device) upload(b *Buffer, off uint64, data []byte) error {
	for len(data) > 0 {
		n := min(uint64(len(data)), d.stagingSize)
		o, err := d.reserve(n)
		if err != nil {
			return err
		}
		copy(mappedBytes(d.staging.blk.mapped, o, n), data)
		if err := d.uploadChunk(b, off, o, n); err != nil {
			return err
		}
		data, off = data[n:], off+n
	}
	return nil
}

// uploadChunk records the copy of the n bytes of the staging ring at o,
// reserved and written, to b at off.
func (d *Device) uploadChunk(b *Buffer, off, o, n uint64) error {
	s, err := d.begin()
	if err != nil {
		return err
	}
	dst := b.off + off
	d.barrierFor(s, nil, []access{{b.blk, span{dst, dst + n}}})
	C.vkamp_cmd_copy(&s.c, d.staging.blk.buf, C.uint64_t(o), b.blk.buf, C.uint64_t(dst), C.uint64_t(n))
	d.staging.live = append(d.staging.live, chunk{o, o + n, s.serial})
	d.stats.Copies++
	return d.recorded(s, nil, []*Buffer{b})
}

func (d *Device) download(b *Buffer, off uint64, data []byte) error {
	for len(data) > 0 {
		n := min(uint64(len(data)), d.stagingSize)
		o, err := d.reserve(n)
		if err != nil {
			return err
		}
		s, err := d.begin()
		if err != nil {
			return err
		}
		src := b.off + off
		d.barrierFor(s, []access{{b.blk, span{src, src + n}}}, nil)
		C.vkamp_cmd_copy(&s.c, b.blk.buf, C.uint64_t(src), d.staging.blk.buf, C.uint64_t(o), C.uint64_t(n))
		d.staging.live = append(d.staging.live, chunk{o, o + n, s.serial})
		d.stats.Copies++
		serial := s.serial
		if err := d.recorded(s, []*Buffer{b}, nil); err != nil {
			return err
		}
		if err := d.waitSerial(serial); err != nil {
			return err
		}
		copy(data, mappedBytes(d.staging.blk.mapped, o, n))
		data, off = data[n:], off+n
	}
	return nil
}
