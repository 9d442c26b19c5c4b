//go:build !cgo

package vk

import (
	"fmt"
	"time"
)

// Without cgo vkamp cannot reach Vulkan; everything builds, and Open says why.
var errNoCgo = fmt.Errorf("%w: vkamp was built without cgo (build with CGO_ENABLED=1, gcc and libvulkan-dev)", ErrNoVulkan)

type driverInfo struct{}

// Device is an open Vulkan device; without cgo none can be opened.
type Device struct{}

// Buffer is a range of device memory.
type Buffer struct{}

// Kernel is a compute pipeline.
type Kernel struct{}

// Devices lists the Vulkan devices; without cgo it returns an error.
func Devices() ([]Info, error) { return nil, errNoCgo }

// Open opens a device; without cgo it returns an error.
func Open(Options) (*Device, error) { return nil, errNoCgo }

// MustOpen is Open that panics on error.
func MustOpen(Options) *Device { panic(errNoCgo) }

// ValidationMessages returns the validation layer's messages.
func ValidationMessages() []string { return nil }

func (d *Device) InjectFaults(Faults)                                          {}
func (d *Device) Info() Info                                                   { return Info{} }
func (d *Device) Tier() Tier                                                   { return TierPacked }
func (d *Device) Deterministic() bool                                          { return false }
func (d *Device) Stats() Stats                                                 { return Stats{} }
func (d *Device) Memory() []HeapUse                                            { return nil }
func (d *Device) KernelTimes() []KernelTime                                    { return nil }
func (d *Device) Alloc(int64) (*Buffer, error)                                 { return nil, errNoCgo }
func (d *Device) AllocIn(*Buffer, int64) error                                 { return errNoCgo }
func (d *Device) KernelFor(any, func() (KernelSource, error)) (*Kernel, error) { return nil, errNoCgo }
func (d *Device) Kernel(KernelSource) (*Kernel, error)                         { return nil, errNoCgo }
func (d *Device) Dispatch(*Kernel, [3]uint32, []byte, ...*Buffer) error        { return errNoCgo }
func (d *Device) Copy(*Buffer, int64, *Buffer, int64, int64) error             { return errNoCgo }
func (d *Device) Fill(*Buffer, int64, int64, uint32) error                     { return errNoCgo }
func (d *Device) Sync() error                                                  { return errNoCgo }
func (d *Device) Wait() error                                                  { return errNoCgo }
func (d *Device) Flush() (uint64, error)                                       { return 0, errNoCgo }
func (d *Device) Reached(uint64) (bool, error)                                 { return false, errNoCgo }
func (d *Device) Close() error                                                 { return nil }
func (b *Buffer) Slice(int64, int64) (*Buffer, error)                          { return nil, errNoCgo }
func (b *Buffer) Block() (*Buffer, int64, error)                               { return nil, 0, errNoCgo }
func (d *Device) Alignment() int64                                             { return 4 }
func (b *Buffer) Size() int64                                                  { return 0 }
func (b *Buffer) TexelsFit() bool                                              { return false }
func (b *Buffer) WriteWith(int64, int64, func([]byte)) error                   { return errNoCgo }
func (b *Buffer) Write(int64, []byte) error                                    { return errNoCgo }
func (b *Buffer) Read(int64, []byte) error                                     { return errNoCgo }
func (b *Buffer) Free() error                                                  { return nil }
func (b *Buffer) Close() error                                                 { return nil }
func (k *Kernel) Name() string                                                 { return "" }
func (d *Device) Local(key any, create func() any) any                         { return create() }
func (d *Device) Matmul() string                                               { return "" }
func (d *Device) Tuning() (bool, string)                                       { return false, "" }
func (info *Info) CanMatmul(string) error                                      { return errNoCgo }

// RecordingFloor measures the driver's recording cost; without cgo it returns an error.
func (d *Device) RecordingFloor(*Kernel, int, int, [3]uint32, []byte, ...*Buffer) (time.Duration, error) {
	return 0, errNoCgo
}

// RecordingFloorSwitching measures the driver's recording cost of alternating
// kernels; without cgo it returns an error.
func (d *Device) RecordingFloorSwitching(*Kernel, *Kernel, int, int, [3]uint32, []byte, ...*Buffer) (time.Duration, error) {
	return 0, errNoCgo
}
