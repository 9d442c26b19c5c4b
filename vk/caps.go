//go:build cgo

package vk

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// DeviceType is the kind of physical device, in Vulkan's terms.
type DeviceType int

const (
	TypeOther DeviceType = iota
	TypeIntegrated
	TypeDiscrete
	TypeVirtual
	TypeCPU
)

var typeNames = [...]string{"other", "integrated", "discrete", "virtual", "cpu"}

func (t DeviceType) String() string {
	if t < 0 || int(t) >= len(typeNames) {
		return fmt.Sprintf("DeviceType(%d)", int(t))
	}
	return typeNames[t]
}

// MarshalText writes the type's name in JSON.
func (t DeviceType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// preference orders device types for automatic choice: higher is better.
func (t DeviceType) preference() int {
	return [...]int{1, 3, 4, 2, 0}[t]
}

// Tier is the capability level that decides which kernel variants a device
// runs. Its values match shaders.Tier.
type Tier int

const (
	// TierPacked stores fp16 two per uint32 word and computes in fp32. Every
	// device can run it (SwiftShader has nothing more).
	TierPacked Tier = iota
	// TierStorage16 reads and writes 16-bit values in storage buffers.
	TierStorage16
	// TierFP16 also has native float16_t arithmetic.
	TierFP16
)

var tierNames = [...]string{"packed", "storage16", "fp16"}

func (t Tier) String() string {
	if t < 0 || int(t) >= len(tierNames) {
		return fmt.Sprintf("Tier(%d)", int(t))
	}
	return tierNames[t]
}

// MarshalText writes the tier's name in JSON.
func (t Tier) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// ParseTier reads a tier name as VKAMP_TIER gives it.
func ParseTier(s string) (Tier, error) {
	for i, n := range tierNames {
		if n == s {
			return Tier(i), nil
		}
	}
	return 0, fmt.Errorf("vk: unknown tier %q (want packed, storage16 or fp16)", s)
}

// Heap is one memory heap of a device.
type Heap struct {
	Size        uint64 `json:"size"`
	DeviceLocal bool   `json:"device_local"`
}

// Info describes a physical device and the capabilities that matter to vkamp.
type Info struct {
	Index         int        `json:"index"`
	Name          string     `json:"name"`
	Vendor        string     `json:"vendor"`
	VendorID      uint32     `json:"vendor_id"`
	DeviceID      uint32     `json:"device_id"`
	Type          DeviceType `json:"type"`
	APIVersion    string     `json:"api_version"`
	DriverName    string     `json:"driver_name"`
	DriverInfo    string     `json:"driver_info"`
	DriverVersion uint32     `json:"driver_version"`
	CacheUUID     string     `json:"pipeline_cache_uuid"`
	Heaps         []Heap     `json:"heaps"`

	ShaderFloat16         bool `json:"shader_float16"`
	StorageBuffer16Bit    bool `json:"storage_buffer_16bit_access"`
	ShaderInt16           bool `json:"shader_int16"`
	RoundingRTEFloat16    bool `json:"rounding_rte_float16"`
	RoundingRTEFloat32    bool `json:"rounding_rte_float32"`
	DenormPreserveFloat16 bool `json:"denorm_preserve_float16"`

	SubgroupSize       uint32   `json:"subgroup_size"`
	SubgroupOperations []string `json:"subgroup_operations"`
	SubgroupInCompute  bool     `json:"subgroup_in_compute"`

	MaxSharedMemory          uint32    `json:"max_compute_shared_memory"`
	MaxWorkgroupSize         [3]uint32 `json:"max_workgroup_size"`
	MaxWorkgroupInvocations  uint32    `json:"max_workgroup_invocations"`
	MaxWorkgroupCount        [3]uint32 `json:"max_workgroup_count"`
	MaxStorageBufferRange    uint32    `json:"max_storage_buffer_range"`
	MaxMemoryAllocationCount uint32    `json:"max_memory_allocation_count"`
	MaxMemoryAllocationSize  uint64    `json:"max_memory_allocation_size"`
	MinStorageBufferAlign    uint64    `json:"min_storage_buffer_offset_alignment"`
	MaxPushConstantsSize     uint32    `json:"max_push_constants_size"`

	Timestamps      bool    `json:"timestamps"`
	TimestampPeriod float32 `json:"timestamp_period_ns"`

	CooperativeMatrix      bool      `json:"cooperative_matrix"`
	CooperativeMatrixShape [3]uint32 `json:"cooperative_matrix_f16_f32_shape,omitempty"`

	// Tier is the highest tier the device supports.
	Tier Tier `json:"tier"`

	physical      C.VkPhysicalDevice
	queueFamily   uint32
	has16bitExt   bool
	hasFloat16Ext bool
	unifiedMemory bool
	caps          C.vkamp_caps
}

var subgroupOpNames = []string{"basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative", "clustered", "quad"}

var vendorNames = map[uint32]string{
	0x10DE: "NVIDIA", 0x1002: "AMD", 0x8086: "Intel", 0x13B5: "ARM", 0x5143: "Qualcomm",
	0x1010: "ImgTec", 0x106B: "Apple", 0x10005: "Mesa", 0x1AE0: "Google",
}

// Devices lists every Vulkan device the loader reports, in the loader's order.
func Devices() ([]Info, error) {
	inst, err := loadInstance()
	if err != nil {
		return nil, err
	}
	vinst := vulkan.Instance(unsafe.Pointer(inst))
	var n uint32
	if r := vulkan.EnumeratePhysicalDevices(vinst, &n, nil); r != vulkan.Success {
		return nil, check(int32(r), "enumerate physical devices")
	}
	pds := make([]vulkan.PhysicalDevice, n)
	if r := vulkan.EnumeratePhysicalDevices(vinst, &n, pds); r != vulkan.Success && r != vulkan.Incomplete {
		return nil, check(int32(r), "enumerate physical devices")
	}
	infos := make([]Info, 0, n)
	for i, pd := range pds[:n] {
		info, ok := describe(inst, pd)
		if !ok {
			continue // no compute queue: useless here
		}
		info.Index = i
		infos = append(infos, info)
	}
	return infos, nil
}

func describe(inst C.VkInstance, pd vulkan.PhysicalDevice) (Info, bool) {
	var props vulkan.PhysicalDeviceProperties
	vulkan.GetPhysicalDeviceProperties(pd, &props)
	props.Deref()
	props.Limits.Deref()
	lim := &props.Limits

	var nq uint32
	vulkan.GetPhysicalDeviceQueueFamilyProperties(pd, &nq, nil)
	qs := make([]vulkan.QueueFamilyProperties, nq)
	vulkan.GetPhysicalDeviceQueueFamilyProperties(pd, &nq, qs)
	family, tsBits := -1, uint32(0)
	for i := range qs[:nq] {
		qs[i].Deref()
		flags := qs[i].QueueFlags
		if flags&vulkan.QueueFlags(vulkan.QueueComputeBit) == 0 {
			continue
		}
		// A compute-only family is the dedicated compute queue; else take the first.
		if family < 0 || flags&vulkan.QueueFlags(vulkan.QueueGraphicsBit) == 0 {
			family, tsBits = i, qs[i].TimestampValidBits
		}
	}
	if family < 0 {
		return Info{}, false
	}

	var mp vulkan.PhysicalDeviceMemoryProperties
	vulkan.GetPhysicalDeviceMemoryProperties(pd, &mp)
	mp.Deref()
	info := Info{
		Name:                     cstr(props.DeviceName[:]),
		VendorID:                 props.VendorID,
		DeviceID:                 props.DeviceID,
		Type:                     DeviceType(props.DeviceType),
		APIVersion:               fmt.Sprintf("%d.%d.%d", props.ApiVersion>>22, (props.ApiVersion>>12)&0x3FF, props.ApiVersion&0xFFF),
		DriverVersion:            props.DriverVersion,
		CacheUUID:                fmt.Sprintf("%x", props.PipelineCacheUUID),
		MaxSharedMemory:          lim.MaxComputeSharedMemorySize,
		MaxWorkgroupSize:         lim.MaxComputeWorkGroupSize,
		MaxWorkgroupInvocations:  lim.MaxComputeWorkGroupInvocations,
		MaxWorkgroupCount:        lim.MaxComputeWorkGroupCount,
		MaxStorageBufferRange:    lim.MaxStorageBufferRange,
		MaxMemoryAllocationCount: lim.MaxMemoryAllocationCount,
		MinStorageBufferAlign:    uint64(lim.MinStorageBufferOffsetAlignment),
		MaxPushConstantsSize:     lim.MaxPushConstantsSize,
		Timestamps:               lim.TimestampComputeAndGraphics == vulkan.True && tsBits > 0,
		TimestampPeriod:          lim.TimestampPeriod,
		physical:                 C.VkPhysicalDevice(unsafe.Pointer(pd)),
		queueFamily:              uint32(family),
	}
	if info.Type < TypeOther || info.Type > TypeCPU {
		info.Type = TypeOther
	}
	info.Vendor = vendorNames[info.VendorID]
	if info.Vendor == "" {
		info.Vendor = fmt.Sprintf("0x%04x", info.VendorID)
	}
	allLocalVisible := true
	for i := uint32(0); i < mp.MemoryHeapCount; i++ {
		h := mp.MemoryHeaps[i]
		h.Deref()
		info.Heaps = append(info.Heaps, Heap{Size: uint64(h.Size), DeviceLocal: h.Flags&vulkan.MemoryHeapFlags(vulkan.MemoryHeapDeviceLocalBit) != 0})
	}
	for i := uint32(0); i < mp.MemoryTypeCount; i++ {
		t := mp.MemoryTypes[i]
		t.Deref()
		if t.PropertyFlags&vulkan.MemoryPropertyFlags(vulkan.MemoryPropertyDeviceLocalBit) != 0 &&
			t.PropertyFlags&vulkan.MemoryPropertyFlags(vulkan.MemoryPropertyHostVisibleBit) == 0 {
			allLocalVisible = false
		}
	}
	// On integrated and CPU devices device memory is host memory: map it.
	info.unifiedMemory = allLocalVisible || info.Type == TypeIntegrated || info.Type == TypeCPU

	C.vkamp_query_caps(inst, info.physical, &info.caps)
	c := &info.caps
	info.DriverName = C.GoString(&c.driver_name[0])
	info.DriverInfo = C.GoString(&c.driver_info[0])
	info.StorageBuffer16Bit = c.storage_buffer_16bit != 0
	info.ShaderFloat16 = c.shader_float16 != 0
	info.ShaderInt16 = c.shader_int16 != 0
	info.RoundingRTEFloat16 = c.rte16 != 0
	info.RoundingRTEFloat32 = c.rte32 != 0
	info.DenormPreserveFloat16 = c.denorm_preserve16 != 0
	info.SubgroupSize = uint32(c.subgroup_size)
	info.SubgroupInCompute = c.subgroup_stages&C.VK_SHADER_STAGE_COMPUTE_BIT != 0
	for b, name := range subgroupOpNames {
		if uint32(c.subgroup_ops)&(1<<b) != 0 {
			info.SubgroupOperations = append(info.SubgroupOperations, name)
		}
	}
	info.MaxMemoryAllocationSize = uint64(c.max_memory_allocation_size)
	info.CooperativeMatrix = c.has_coopmat_ext != 0
	if c.coopmat_f16_f32 != 0 {
		info.CooperativeMatrixShape = [3]uint32{uint32(c.coopmat_m), uint32(c.coopmat_n), uint32(c.coopmat_k)}
	}
	switch {
	case info.StorageBuffer16Bit && info.ShaderFloat16:
		info.Tier = TierFP16
	case info.StorageBuffer16Bit:
		info.Tier = TierStorage16
	default:
		info.Tier = TierPacked
	}
	return info, true
}

func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
