package vk

import (
	"errors"
	"fmt"
)

// Errors that callers can match with errors.Is. Every error from this package
// wraps one of these or says plainly what was wrong with the request.
var (
	ErrNoVulkan           = errors.New("vk: no Vulkan loader")
	ErrNoDevice           = errors.New("vk: no Vulkan device")
	ErrClosed             = errors.New("vk: device is closed")
	ErrOutOfHostMemory    = errors.New("vk: out of host memory")
	ErrOutOfDeviceMemory  = errors.New("vk: out of device memory")
	ErrDeviceLost         = errors.New("vk: device lost")
	ErrInitialization     = errors.New("vk: initialization failed")
	ErrLayerNotPresent    = errors.New("vk: layer not present")
	ErrExtensionMissing   = errors.New("vk: extension not present")
	ErrFeatureMissing     = errors.New("vk: feature not present")
	ErrIncompatibleDriver = errors.New("vk: incompatible driver")
	ErrTimeout            = errors.New("vk: timeout")
	ErrTooManyObjects     = errors.New("vk: too many objects")
	ErrInvalidArgument    = errors.New("vk: invalid argument")
	ErrEnvironment        = errors.New("vk: invalid environment variable") // a VKAMP_* name or value Open refuses
	ErrVulkan             = errors.New("vk: Vulkan error")
)

// Result is a VkResult that is not VK_SUCCESS.
type Result int32

var resultErrors = map[Result]error{
	-1:          ErrOutOfHostMemory,
	-2:          ErrOutOfDeviceMemory,
	-3:          ErrInitialization,
	-4:          ErrDeviceLost,
	-6:          ErrLayerNotPresent,
	-7:          ErrExtensionMissing,
	-8:          ErrFeatureMissing,
	-9:          ErrIncompatibleDriver,
	-10:         ErrTooManyObjects,
	2:           ErrTimeout,
	-1000069000: ErrOutOfDeviceMemory, // VK_ERROR_OUT_OF_POOL_MEMORY
}

var resultNames = map[Result]string{
	-1: "VK_ERROR_OUT_OF_HOST_MEMORY", -2: "VK_ERROR_OUT_OF_DEVICE_MEMORY",
	-3: "VK_ERROR_INITIALIZATION_FAILED", -4: "VK_ERROR_DEVICE_LOST", -5: "VK_ERROR_MEMORY_MAP_FAILED",
	-6: "VK_ERROR_LAYER_NOT_PRESENT", -7: "VK_ERROR_EXTENSION_NOT_PRESENT",
	-8: "VK_ERROR_FEATURE_NOT_PRESENT", -9: "VK_ERROR_INCOMPATIBLE_DRIVER", -10: "VK_ERROR_TOO_MANY_OBJECTS",
	-11: "VK_ERROR_FORMAT_NOT_SUPPORTED", -12: "VK_ERROR_FRAGMENTED_POOL", -13: "VK_ERROR_UNKNOWN",
	2: "VK_TIMEOUT", 1: "VK_NOT_READY", -1000069000: "VK_ERROR_OUT_OF_POOL_MEMORY",
}

func (r Result) Error() string {
	if n, ok := resultNames[r]; ok {
		return n
	}
	return fmt.Sprintf("VkResult(%d)", int32(r))
}

// Is lets errors.Is(err, ErrDeviceLost) and the like match a Result.
func (r Result) Is(target error) bool {
	if e, ok := resultErrors[r]; ok {
		return e == target
	}
	return target == ErrVulkan
}

// check turns a VkResult into nil or an error that says what was being done.
func check(r int32, what string, args ...any) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("vk: %s: %w", fmt.Sprintf(what, args...), Result(r))
}
