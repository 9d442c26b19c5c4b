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

// driverInfo is what Open needs of a physical device beyond Info.
type driverInfo struct {
	physical      C.VkPhysicalDevice
	queueFamily   uint32
	unifiedMemory bool
	caps          C.vkamp_caps
	api           uint32 // the Vulkan version it runs at: its own, at most the instance's
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
		MaxTexelBufferElements:   lim.MaxTexelBufferElements,
		MaxMemoryAllocationCount: lim.MaxMemoryAllocationCount,
		MinStorageBufferAlign:    uint64(lim.MinStorageBufferOffsetAlignment),
		MinTexelBufferAlign:      uint64(lim.MinTexelBufferOffsetAlignment),
		MaxPushConstantsSize:     lim.MaxPushConstantsSize,
		Timestamps:               lim.TimestampComputeAndGraphics == vulkan.True && tsBits > 0,
		TimestampPeriod:          lim.TimestampPeriod,
		drv:                      &driverInfo{physical: C.VkPhysicalDevice(unsafe.Pointer(pd)), queueFamily: uint32(family), api: min(props.ApiVersion, uint32(C.vkamp_instance_api()))},
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
	info.drv.unifiedMemory = allLocalVisible || info.Type == TypeIntegrated || info.Type == TypeCPU
	info.HostMapped = info.drv.unifiedMemory

	C.vkamp_query_caps(inst, info.drv.physical, &info.drv.caps)
	c := &info.drv.caps
	info.Driver = DriverID(c.driver_id)
	info.DriverName = C.GoString(&c.driver_name[0])
	info.DriverInfo = C.GoString(&c.driver_info[0])
	info.StorageBuffer16Bit = c.storage_buffer_16bit != 0
	info.ShaderFloat16 = c.shader_float16 != 0
	info.ShaderInt16 = c.shader_int16 != 0
	info.ShaderInt64 = c.shader_int64 != 0
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
	for i := range int(c.coopmat_f16_n) {
		s := c.coopmat_f16[i]
		info.CooperativeMatrixShapes = append(info.CooperativeMatrixShapes, [3]uint32{uint32(s[0]), uint32(s[1]), uint32(s[2])})
	}
	for i := range int(c.coopmat_bf16_n) {
		s := c.coopmat_bf16[i]
		info.CooperativeMatrixBF16Shapes = append(info.CooperativeMatrixBF16Shapes, [3]uint32{uint32(s[0]), uint32(s[1]), uint32(s[2])})
	}
	info.CooperativeMatrixUsable = coopUsable(c)
	info.CooperativeMatrixBF16Usable = info.CooperativeMatrixUsable && c.coopmat_bf16_n > 0 && c.bf16_type != 0 && c.bf16_coopmat != 0
	if c.has_cm2_ext != 0 && c.maintenance4 != 0 { // its SPIR-V 1.6 kernels need maintenance4
		f := uint32(c.cm2_features)
		cm2 := &CoopMat2{
			WorkgroupScope: f&C.VKAMP_CM2_WORKGROUP_SCOPE != 0, FlexibleDimensions: f&C.VKAMP_CM2_FLEXIBLE_DIMENSIONS != 0,
			Reductions: f&C.VKAMP_CM2_REDUCTIONS != 0, Conversions: f&C.VKAMP_CM2_CONVERSIONS != 0,
			PerElementOperations: f&C.VKAMP_CM2_PER_ELEMENT != 0, TensorAddressing: f&C.VKAMP_CM2_TENSOR_ADDRESSING != 0,
			BlockLoads: f&C.VKAMP_CM2_BLOCK_LOADS != 0, MaxDimension: uint32(c.cm2_max_dimension),
			WorkgroupMaxSize: uint32(c.cm2_workgroup_max), ReservedSharedMemory: uint32(c.cm2_reserved_shared),
		}
		for i := range int(c.cm2_flex_n) {
			g := c.cm2_flex[i]
			cm2.Flexible = append(cm2.Flexible, CoopMat2Granularity{M: uint32(g[0]), N: uint32(g[1]), K: uint32(g[2]),
				Workgroup: uint32(g[3]) == scopeWorkgroup, Invocations: uint32(g[4]), BF16: g[5] != 0})
		}
		info.CooperativeMatrix2 = cm2
	}
	info.MemoryBudget = c.has_memory_budget_ext != 0
	info.PushDescriptors = c.has_push_descriptor_ext != 0
	info.DeviceUUID = fmt.Sprintf("%x", C.GoBytes(unsafe.Pointer(&c.device_uuid[0]), 16))
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

// coopUsable reports whether cooperative-matrix kernels can run: an fp16 x
// fp16 -> fp32 subgroup shape, the cooperativeMatrix feature, the Vulkan
// memory model their SPIR-V declares (VK_KHR_vulkan_memory_model: the
// instance asks for Vulkan 1.1, so not the 1.2 core feature), and the fp16
// tier's features.
func coopUsable(c *C.vkamp_caps) bool {
	return c.has_coopmat_ext != 0 && c.coopmat_f16_n != 0 && c.coopmat_feature != 0 &&
		c.has_vmm_ext != 0 && c.vmm != 0 && c.storage_buffer_16bit != 0 && c.shader_float16 != 0
}

// scopeWorkgroup is VK_SCOPE_WORKGROUP_KHR.
const scopeWorkgroup = 2

// cm2Bits are the VK_NV_cooperative_matrix2 features Open enables: every one
// the device lists, where Info offers the extension (with maintenance4, at
// the fp16 tier); none otherwise.
func cm2Bits(info *Info) uint32 {
	if info.CooperativeMatrix2 == nil {
		return 0
	}
	return uint32(info.drv.caps.cm2_features)
}

func cstr(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
