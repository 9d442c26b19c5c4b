package vk

import "fmt"

// DriverID is the driver behind a device, as Vulkan's VkDriverId numbers
// it: a typed fact for the few choices that depend on a driver's known
// behaviour (tensor's forms table), so that nothing matches driver names.
type DriverID uint32

// The drivers vkamp knows something particular about, and the GPU vendors'.
const (
	DriverUnknown     DriverID = 0
	DriverAMDProp     DriverID = 1  // VK_DRIVER_ID_AMD_PROPRIETARY
	DriverAMDOpen     DriverID = 2  // VK_DRIVER_ID_AMD_OPEN_SOURCE (AMDVLK)
	DriverRADV        DriverID = 3  // VK_DRIVER_ID_MESA_RADV
	DriverNVIDIA      DriverID = 4  // VK_DRIVER_ID_NVIDIA_PROPRIETARY
	DriverIntelWin    DriverID = 5  // VK_DRIVER_ID_INTEL_PROPRIETARY_WINDOWS
	DriverANV         DriverID = 6  // VK_DRIVER_ID_INTEL_OPEN_SOURCE_MESA
	DriverSwiftShader DriverID = 10 // VK_DRIVER_ID_GOOGLE_SWIFTSHADER
	DriverLavapipe    DriverID = 13 // VK_DRIVER_ID_MESA_LLVMPIPE
	DriverNVK         DriverID = 24 // VK_DRIVER_ID_MESA_NVK
)

var driverNames = map[DriverID]string{
	DriverUnknown: "unknown", DriverAMDProp: "amd-proprietary", DriverAMDOpen: "amdvlk", DriverRADV: "radv",
	DriverNVIDIA: "nvidia", DriverIntelWin: "intel-windows", DriverANV: "anv",
	DriverSwiftShader: "swiftshader", DriverLavapipe: "lavapipe", DriverNVK: "nvk",
}

func (id DriverID) String() string {
	if s, ok := driverNames[id]; ok {
		return s
	}
	return fmt.Sprintf("driver-%d", uint32(id))
}

// MarshalText writes the driver's name in JSON.
func (id DriverID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }
