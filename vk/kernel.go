//go:build cgo

package vk

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"unsafe"
)

// Kernel is a compute pipeline. It belongs to its Device and is destroyed
// with it.
type Kernel struct {
	d         *Device
	name      string
	access    []Access
	pushSize  int
	setLayout C.VkDescriptorSetLayout
	layout    C.VkPipelineLayout
	pipeline  C.VkPipeline
}

// Name returns the kernel's name.
func (k *Kernel) Name() string { return k.name }

// Kernel returns the pipeline for src, building it on first use and caching
// it by name and specialization constants for the device's lifetime.
func (d *Device) Kernel(src KernelSource) (*Kernel, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return nil, err
	}
	return d.kernel(src.key(), src)
}

// KernelFor returns the kernel cached under key, a comparable value that
// stands for a source, calling build only on the first use of key. It spares
// callers that launch kernels by name the cost of preparing a source (and
// its cache key) on every dispatch.
func (d *Device) KernelFor(key any, build func() (KernelSource, error)) (*Kernel, error) {
	d.mu.Lock()
	if err := d.usable(); err != nil {
		d.mu.Unlock()
		return nil, err
	}
	if k, ok := d.kernelsByKey[key]; ok {
		d.mu.Unlock()
		return k, nil
	}
	d.mu.Unlock()
	src, err := build()
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return nil, err
	}
	k, err := d.kernel(src.key(), src)
	if err == nil {
		d.kernelsByKey[key] = k
	}
	return k, err
}

func (d *Device) kernel(key string, src KernelSource) (*Kernel, error) {
	if k, ok := d.kernels[key]; ok {
		return k, nil
	}
	if len(src.SPIRV) == 0 || len(src.SPIRV)%4 != 0 || !isSPIRV(src.SPIRV) {
		return nil, fmt.Errorf("vk: kernel %s: %w: not SPIR-V", src.Name, ErrInvalidArgument)
	}
	if len(src.Bindings) > maxBindings {
		return nil, fmt.Errorf("vk: kernel %s: %w: %d bindings, at most %d", src.Name, ErrInvalidArgument, len(src.Bindings), maxBindings)
	}
	if src.PushSize < 0 || src.PushSize%4 != 0 || uint32(src.PushSize) > min(d.info.MaxPushConstantsSize, maxPush) {
		return nil, fmt.Errorf("vk: kernel %s: %w: push constant size %d (device allows %d, vkamp %d)",
			src.Name, ErrInvalidArgument, src.PushSize, d.info.MaxPushConstantsSize, maxPush)
	}
	if v := spirvVersion(src.SPIRV); v > 0x10300 && d.info.drv.api < apiVersionFor(v) {
		return nil, fmt.Errorf("vk: kernel %s: %w: SPIR-V %d.%d needs Vulkan %s; %s runs %s", src.Name, ErrFeatureMissing,
			v>>16, v>>8&0xFF, apiName(apiVersionFor(v)), d.info.Name, d.info.APIVersion)
	}
	if len(src.Spec) > maxSpec {
		return nil, fmt.Errorf("vk: kernel %s: %w: %d specialization constants, at most %d", src.Name, ErrInvalidArgument, len(src.Spec), maxSpec)
	}
	if x, ok := src.Spec[0]; ok && (x == 0 || x > d.info.MaxWorkgroupInvocations || x > d.info.MaxWorkgroupSize[0]) {
		return nil, fmt.Errorf("vk: kernel %s: %w: workgroup size %d over the device's limit %d",
			src.Name, ErrInvalidArgument, x, min(d.info.MaxWorkgroupInvocations, d.info.MaxWorkgroupSize[0]))
	}
	// Copy the code into 4-byte-aligned memory.
	code := make([]uint32, len(src.SPIRV)/4)
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&code[0])), len(src.SPIRV)), src.SPIRV)
	code = freezeBoolSpecs(code, src.Spec) // SwiftShader folds no spec-constant branch (specfreeze.go)
	spec := make([]C.uint32_t, 0, 2*len(src.Spec))
	for id, v := range src.Spec {
		spec = append(spec, C.uint32_t(id), C.uint32_t(v))
	}
	var specPtr *C.uint32_t
	if len(spec) > 0 {
		specPtr = &spec[0]
	}
	var texel [maxBindings]C.uint32_t
	for i, a := range src.Bindings {
		if a&Texels != 0 {
			if a&Write != 0 {
				return nil, fmt.Errorf("vk: kernel %s: %w: texel binding %d must be read-only", src.Name, ErrInvalidArgument, i)
			}
			texel[i] = 1
		}
	}
	k := &Kernel{d: d, name: src.Name, access: append([]Access(nil), src.Bindings...), pushSize: src.PushSize}
	r := C.vkamp_create_kernel(d.dev, d.cache, (*C.uint32_t)(unsafe.Pointer(&code[0])), C.size_t(4*len(code)),
		C.uint32_t(len(src.Bindings)), &texel[0], C.uint32_t(src.PushSize), specPtr, C.uint32_t(len(src.Spec)),
		cbool(d.info.PushDescriptors), &k.setLayout, &k.layout, &k.pipeline)
	if err := check(int32(r), "create pipeline %s", src.Name); err != nil {
		return nil, err
	}
	d.kernels[key] = k
	d.stats.Pipelines++
	return k, nil
}

// spirvVersion is a module's SPIR-V version word (0x00010300 for 1.3).
func spirvVersion(b []byte) uint32 {
	if len(b) < 8 {
		return 0
	}
	return uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24
}

// apiVersionFor is the Vulkan version that takes SPIR-V version v: 1.4
// and 1.5 came with Vulkan 1.2, 1.6 with 1.3.
func apiVersionFor(v uint32) uint32 {
	if v >= 0x10600 {
		return 1<<22 | 3<<12
	}
	return 1<<22 | 2<<12
}

func apiName(v uint32) string { return fmt.Sprintf("%d.%d", v>>22, v>>12&0x3FF) }

func isSPIRV(b []byte) bool {
	return len(b) >= 20 && b[0] == 0x03 && b[1] == 0x02 && b[2] == 0x23 && b[3] == 0x07
}

// The pipeline cache is kept on disk per device and driver, so pipelines
// compile once per machine.
func (d *Device) cacheFile() string {
	dir := d.opts.PipelineCacheDir
	if dir == "off" {
		return ""
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(base, "vkamp")
	}
	return filepath.Join(dir, fmt.Sprintf("pipelines-%04x-%04x-%s.bin", d.info.VendorID, d.info.DeviceID, d.info.CacheUUID))
}

func (d *Device) openPipelineCache() error {
	var data []byte
	if f := d.cacheFile(); f != "" {
		data, _ = os.ReadFile(f) // a missing cache is normal
	}
	var ptr unsafe.Pointer
	if len(data) > 0 {
		ptr = unsafe.Pointer(&data[0])
	}
	r := C.vkamp_create_pipeline_cache(d.dev, ptr, C.size_t(len(data)), &d.cache)
	return check(int32(r), "create pipeline cache")
}

// savePipelineCache writes the cache atomically. Failing to save only costs
// compile time later, so it is not an error.
func (d *Device) savePipelineCache() {
	f := d.cacheFile()
	if f == "" || d.cache == 0 || d.stats.Pipelines == 0 {
		return
	}
	var n C.size_t
	if C.vkamp_get_pipeline_cache_data(d.dev, d.cache, &n, nil) != 0 || n == 0 {
		return
	}
	data := make([]byte, n)
	if C.vkamp_get_pipeline_cache_data(d.dev, d.cache, &n, unsafe.Pointer(&data[0])) != 0 {
		return
	}
	if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(f), ".pipelines-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data[:n])
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), f) != nil {
		os.Remove(tmp.Name())
	}
}
