//go:build cgo

package vk

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"
)

// RecordingFloor measures the driver's own host cost of recording a launch,
// the floor under Dispatch's: it records n launches of k into a command
// buffer of its own (a slot like Dispatch's, whose pool takes its host
// memory from a command arena, arena.c) in one call into the C layer,
// straight through the Vulkan API (the pipeline bound once, then per
// launch the buffers pushed as descriptors, or a descriptor set allocated
// and written where the device lacks push descriptors, the push constants
// and the dispatch), with no
// checks, hazard tracking or bookkeeping. It does that rounds times and
// returns the fastest recording's host time over n. Nothing is submitted: the
// command buffer, left recording, goes with its pool.
// k takes storage buffers only (no texel bindings).
func (d *Device) RecordingFloor(k *Kernel, n, rounds int, groups [3]uint32, push []byte, args ...*Buffer) (time.Duration, error) {
	return d.recordingFloor([]*Kernel{k}, false, n, rounds, groups, push, args)
}

// RecordingFloorSwitching is RecordingFloor for a training step's sequence,
// where consecutive launches run different kernels that each depend on the
// one before: the launches alternate between k and other, each bound before
// its launch, with a barrier before every launch. other takes the same
// buffers and push constants as k.
func (d *Device) RecordingFloorSwitching(k, other *Kernel, n, rounds int, groups [3]uint32, push []byte, args ...*Buffer) (time.Duration, error) {
	return d.recordingFloor([]*Kernel{k, other}, true, n, rounds, groups, push, args)
}

func (d *Device) recordingFloor(ks []*Kernel, barrier bool, n, rounds int, groups [3]uint32, push []byte, args []*Buffer) (time.Duration, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return 0, err
	}
	var pipes [2]C.VkPipeline
	var layouts [2]C.VkPipelineLayout
	var setLayouts [2]C.VkDescriptorSetLayout
	if n < 1 || rounds < 1 {
		return 0, fmt.Errorf("vk: recording floor: %w: count %d and rounds %d must be positive", ErrInvalidArgument, n, rounds)
	}
	for i, k := range ks {
		if k == nil || k.d != d || len(args) != len(k.access) || len(push) != k.pushSize {
			return 0, fmt.Errorf("vk: recording floor: %w: kernel %d is nil or from another device, or takes other buffers or push constants", ErrInvalidArgument, i)
		}
		pipes[i], layouts[i], setLayouts[i] = k.pipeline, k.layout, k.setLayout
	}
	var a C.vkamp_dispatch_args
	for i, b := range args {
		if b == nil || b.dead() || b.d != d {
			return 0, fmt.Errorf("vk: recording floor: %w: binding %d is nil, freed or from another device", ErrInvalidArgument, i)
		}
		for _, k := range ks {
			if k.access[i]&Texels != 0 {
				return 0, fmt.Errorf("vk: recording floor %s: %w: binding %d is texels", k.name, ErrInvalidArgument, i)
			}
		}
		a.bufs[i], a.offs[i], a.ranges[i] = C.uint64_t(b.blk.buf), C.uint64_t(b.off), C.uint64_t(b.alloc)
	}
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&a.push[0])), maxPush), push)
	var s C.vkamp_slot
	r := C.vkamp_create_slot(d.dev, C.uint32_t(d.info.drv.queueFamily), C.uint32_t(n), C.uint32_t(n*len(args)),
		0, cbool(d.info.PushDescriptors), &s)
	if err := check(int32(r), "create command buffer"); err != nil {
		return 0, d.fail(err)
	}
	defer C.vkamp_destroy_slot(d.dev, &s)
	var best time.Duration
	for i := range rounds {
		if r := C.vkamp_reset_slot(d.dev, &s); r != C.VK_SUCCESS {
			return 0, d.fail(check(int32(r), "reset command pool"))
		}
		if r := C.vkamp_begin(d.dev, &s, 0); r != C.VK_SUCCESS {
			return 0, d.fail(check(int32(r), "begin command buffer"))
		}
		t0 := time.Now()
		r := C.vkamp_record_dispatches(d.dev, &s, &pipes[0], &layouts[0], &setLayouts[0], C.uint32_t(len(ks)), C.uint32_t(len(args)), &a,
			C.uint32_t(len(push)), C.uint32_t(groups[0]), C.uint32_t(groups[1]), C.uint32_t(groups[2]), C.uint32_t(n), cbool(barrier))
		t := time.Since(t0)
		if r != C.VK_SUCCESS {
			return 0, d.fail(check(int32(r), "record %d dispatches of %s", n, ks[0].name))
		}
		if i == 0 || t < best {
			best = t
		}
	}
	return best / time.Duration(n), nil
}
