//go:build cgo

package vk

/*
#include "shim.h"
*/
import "C"

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Device is an open Vulkan device with its queue, memory, kernels and
// recording state. All its methods are safe for concurrent use: one lock
// serialises recording and submission.
type Device struct {
	mu     sync.Mutex
	info   Info
	tier   Tier
	det    bool
	opts   Options
	dev    C.VkDevice
	queue  C.VkQueue
	closed bool
	err    error // sticky: the device was lost

	align       uint64
	blockSize   uint64
	stagingSize uint64
	batchSize   int
	timestamps  bool

	blocks      []*block
	spare       []*block          // freed dedicated blocks kept for reuse
	heapSize    []uint64          // per heap: the size allocations are counted against
	heapUsed    *[maxHeaps]uint64 // per heap: bytes in blocks, shared by the Devices of one physical device
	nextBlockID int
	staging     *ring
	pendingFree []pendingFree

	kernels      map[string]*Kernel
	kernelsByKey map[any]*Kernel
	cache        C.VkPipelineCache

	slots      []*slot
	nextSlot   int
	cur        *slot
	lastSerial uint64
	completed  uint64
	hz         hazards
	resets     *resetter // resets finished slots' pools (reset.go)
	scratch    scratch
	capture    *Graph   // the open capture (capture.go)
	trace      *Trace   // the open trace (trace.go)
	allocs     uint64   // buffers made so far (Buffer.born)
	traces     uint64   // traces begun so far (Trace.id)
	spareTrace *Trace   // a released trace whose slices the next one reuses
	graphs     []*Graph // captured graphs not yet closed
	frees      uint64   // buffers freed and blocks destroyed so far (a graph's staleness check)

	stats  Stats
	times  map[string]*KernelTime
	faults Faults

	matmul string // Options.Matmul or VKAMP_MATMUL: the forced matmul kind, "" for the rule
	// plainForms: Options.PlainForms or VKAMP_PLAIN_FORMS.
	plainForms bool
	tuneOff    bool   // Options.NoTune or VKAMP_TUNE=off
	tuneDir    string // Options.TuneDir or VKAMP_TUNE_DIR

	localMu sync.Mutex
	locals  map[any]any // Local's values
}

// InjectFaults arms the faults in f, replacing any armed before.
func (d *Device) InjectFaults(f Faults) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f.allocs, f.submits, f.waits = 0, 0, 0
	d.faults = f
}

// Open opens a device. Without Vulkan, or without a device, it returns an
// error that says what to install. It first checks every VKAMP_* environment
// variable: an unknown name, a value the variable does not take, or one the
// chosen device cannot honour (VKAMP_MATMUL=coop without cooperative
// matrices) is an error that wraps ErrEnvironment and names the variable, its
// value and what it accepts. Values are checked even where an Options field
// overrides the variable.
func Open(opts Options) (*Device, error) {
	if err := checkEnv(); err != nil {
		return nil, err
	}
	infos, err := Devices()
	if err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, fmt.Errorf("%w: the loader found no device with a compute queue (install mesa-vulkan-drivers for a software device, or your GPU vendor's driver)", ErrNoDevice)
	}
	sel, from := opts.Device, ""
	if sel == "" {
		sel, from = os.Getenv("VKAMP_DEVICE"), "VKAMP_DEVICE"
	}
	info, err := choose(infos, sel)
	if err != nil {
		if from != "" {
			err = fmt.Errorf("%w: %s=%q: %w", ErrEnvironment, from, sel, err)
		}
		return nil, err
	}
	tier := info.Tier
	ts, from := opts.Tier, ""
	if ts == "" {
		ts, from = os.Getenv("VKAMP_TIER"), "VKAMP_TIER"
	}
	if ts != "" {
		t, err := ParseTier(ts)
		if err != nil {
			return nil, err
		}
		if t > info.Tier {
			if from != "" {
				return nil, envError(from, ts, "%s supports at most tier %s; want %s", info.Name, info.Tier, orList(tierNames[:info.Tier+1]))
			}
			return nil, fmt.Errorf("vk: tier %s asked for, but %s supports at most %s", t, info.Name, info.Tier)
		}
		tier = t
	}
	if tier < TierFP16 { // the kernels' fp16 matrices need shaderFloat16
		info.CooperativeMatrixUsable = false
		info.CooperativeMatrixBF16Usable = false
		info.CooperativeMatrix2 = nil
	}
	d := &Device{
		info:         info,
		tier:         tier,
		det:          opts.Deterministic || envBool("VKAMP_DETERMINISTIC"),
		matmul:       cmp.Or(opts.Matmul, os.Getenv("VKAMP_MATMUL")),
		tuneOff:      opts.NoTune || os.Getenv("VKAMP_TUNE") == "off",
		tuneDir:      cmp.Or(opts.TuneDir, os.Getenv("VKAMP_TUNE_DIR")),
		plainForms:   opts.PlainForms || envBool("VKAMP_PLAIN_FORMS"),
		opts:         opts,
		align:        max(info.MinStorageBufferAlign, info.MinTexelBufferAlign, 16),
		blockSize:    defaultBlockSize,
		stagingSize:  defaultStagingSize,
		batchSize:    defaultBatchSize,
		timestamps:   opts.Timestamps && info.Timestamps,
		kernels:      map[string]*Kernel{},
		kernelsByKey: map[any]*Kernel{},
		times:        map[string]*KernelTime{},
	}
	d.openHeaps()
	if opts.BlockSize > 0 {
		d.blockSize = roundUp(uint64(opts.BlockSize), d.align)
	}
	if opts.StagingSize > 0 {
		d.stagingSize = roundUp(uint64(opts.StagingSize), 64)
	}
	if opts.BatchSize > 0 {
		d.batchSize = opts.BatchSize
	}
	if opts.Timestamps && !info.Timestamps {
		return nil, fmt.Errorf("vk: %s: %w: no timestamp queries on its compute queue", info.Name, ErrFeatureMissing)
	}
	caps := info.drv.caps // a copy: what this device enables
	if opts.DescriptorSets {
		caps.has_push_descriptor_ext = 0
		d.info.PushDescriptors = false
	}
	r := C.vkamp_create_device(info.drv.physical, C.uint32_t(info.drv.queueFamily), &caps,
		cbool(tier >= TierStorage16), cbool(tier >= TierFP16), cbool(info.CooperativeMatrixUsable),
		cbool(info.CooperativeMatrixBF16Usable), C.uint32_t(cm2Bits(&info)), &d.dev, &d.queue)
	if r != C.VK_SUCCESS && info.CooperativeMatrixUsable {
		// A driver that lists the features but will not enable them: run
		// without cooperative matrices rather than not at all.
		d.info.CooperativeMatrixUsable = false
		d.info.CooperativeMatrixBF16Usable = false
		d.info.CooperativeMatrix2 = nil
		r = C.vkamp_create_device(info.drv.physical, C.uint32_t(info.drv.queueFamily), &caps,
			cbool(tier >= TierStorage16), cbool(tier >= TierFP16), 0, 0, 0, &d.dev, &d.queue)
	}
	if err := check(int32(r), "create device %s", info.Name); err != nil {
		return nil, err
	}
	if err := checkMatmul(&d.info, opts.Matmul); err != nil { // after the device said whether it enables cooperative matrices
		d.destroy()
		return nil, err
	}
	if err := d.openPipelineCache(); err != nil {
		d.destroy()
		return nil, err
	}
	for range numSlots {
		s := &slot{}
		r := C.vkamp_create_slot(d.dev, C.uint32_t(info.drv.queueFamily), C.uint32_t(d.batchSize),
			C.uint32_t(d.batchSize*maxBindings), C.uint32_t(d.queries()), cbool(d.info.PushDescriptors), &s.c)
		if err := check(int32(r), "create command buffer"); err != nil {
			d.destroy()
			return nil, err
		}
		d.slots = append(d.slots, s)
	}
	d.startResetter()
	return d, nil
}

// MustOpen is Open for tools, tests and examples: it panics on error.
func MustOpen(opts Options) *Device {
	d, err := Open(opts)
	if err != nil {
		panic(err)
	}
	return d
}

func choose(infos []Info, sel string) (Info, error) {
	if sel != "" {
		if i, err := strconv.Atoi(sel); err == nil {
			for _, info := range infos {
				if info.Index == i {
					return info, nil
				}
			}
			return Info{}, fmt.Errorf("%w: no device with index %d (%s)", ErrNoDevice, i, listNames(infos))
		}
		for _, info := range infos {
			if strings.Contains(strings.ToLower(info.Name), strings.ToLower(sel)) {
				return info, nil
			}
		}
		return Info{}, fmt.Errorf("%w: no device named like %q (%s)", ErrNoDevice, sel, listNames(infos))
	}
	best := append([]Info(nil), infos...)
	sort.SliceStable(best, func(i, j int) bool { return best[i].Type.preference() > best[j].Type.preference() })
	return best[0], nil
}

func listNames(infos []Info) string {
	var s []string
	for _, info := range infos {
		s = append(s, fmt.Sprintf("%d: %s", info.Index, info.Name))
	}
	return "devices are " + strings.Join(s, ", ")
}

// Info describes the device.
func (d *Device) Info() Info { return d.info }

// Tier is the tier of kernel variants this device runs.
func (d *Device) Tier() Tier { return d.tier }

// Matmul is the matmul kernel kind the device was told to run (Options.Matmul
// or VKAMP_MATMUL, checked by Open), or "" for tensor's rule.
func (d *Device) Matmul() string { return d.matmul }

// PlainForms reports whether the device was told to run every kernel
// family's plain form (Options.PlainForms, VKAMP_PLAIN_FORMS).
func (d *Device) PlainForms() bool { return d.plainForms }

// Tuning says whether the matmul autotuner may run (Options.NoTune,
// VKAMP_TUNE) and where it stores its results (Options.TuneDir,
// VKAMP_TUNE_DIR; "" for the user's cache directory).
func (d *Device) Tuning() (on bool, dir string) { return !d.tuneOff, d.tuneDir }

// Deterministic reports whether the device runs vkamp's deterministic
// kernels: the same bits on every driver and tier for the ops they cover
// (tensor's doc lists them), at some cost in speed.
func (d *Device) Deterministic() bool { return d.det }

// Stats returns the device's counters.
func (d *Device) Stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.stats
}

// KernelTimes returns the device time per kernel name, from timestamps of
// completed work, sorted by name. It is empty unless Options.Timestamps.
func (d *Device) KernelTimes() []KernelTime {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []KernelTime
	for _, kt := range d.times {
		out = append(out, *kt)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (d *Device) usable() error {
	if d == nil || d.closed {
		return ErrClosed
	}
	return d.err
}

func isDeviceLost(err error) bool { return errors.Is(err, ErrDeviceLost) }

// Close waits for the device to finish, saves the pipeline cache and destroys
// every Vulkan object the device made, buffers included. It is idempotent;
// afterwards every method returns ErrClosed. It returns an error recorded by
// work that failed on the device and was not yet reported.
func (d *Device) Close() error {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	var err error
	if d.err == nil {
		err = d.waitSerial(d.lastSerial)
	}
	d.closed = true
	if d.err == nil {
		d.savePipelineCache()
	}
	d.destroy()
	return err
}

// destroy releases everything in reverse order of creation.
func (d *Device) destroy() {
	if d.dev == nil {
		return
	}
	C.vkamp_device_wait_idle(d.dev)
	for _, g := range d.graphs {
		g.destroy()
	}
	if d.capture != nil {
		d.capture.destroy()
	}
	d.graphs, d.capture = nil, nil
	d.resets.stop()
	d.resets = nil
	for _, s := range d.slots {
		C.vkamp_destroy_slot(d.dev, &s.c)
	}
	d.slots, d.cur = nil, nil
	for _, k := range d.kernels {
		C.vkamp_destroy_kernel(d.dev, k.setLayout, k.layout, k.pipeline)
	}
	d.kernels, d.kernelsByKey = nil, nil
	if d.cache != 0 {
		C.vkamp_destroy_pipeline_cache(d.dev, d.cache)
		d.cache = 0
	}
	if d.staging != nil {
		d.destroyViews(d.staging.blk)
		C.vkamp_destroy_block(d.dev, d.staging.blk.buf, d.staging.blk.mem)
		d.countBlock(d.staging.blk, -1)
		d.staging = nil
	}
	for _, blk := range d.blocks {
		d.destroyViews(blk)
		C.vkamp_destroy_block(d.dev, blk.buf, blk.mem)
		d.countBlock(blk, -1)
	}
	d.blocks, d.pendingFree = nil, nil
	d.stats.MemoryBlocks, d.stats.DeviceBytes = 0, 0
	C.vkamp_destroy_device(d.dev)
	d.dev = nil
}
