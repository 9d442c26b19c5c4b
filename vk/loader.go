//go:build cgo

package vk

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// The Vulkan instance is process-wide: vulkan-go keeps one global table of
// instance functions, and one instance serves any number of devices. It is
// created on first use and lives until the process exits.
var instance struct {
	once       sync.Once
	handle     C.VkInstance
	validation bool
	err        error
}

func loadInstance() (C.VkInstance, error) {
	instance.once.Do(func() {
		if msg := C.vkamp_load(); msg != nil {
			instance.err = fmt.Errorf("%w: %s", ErrNoVulkan, C.GoString(msg))
			return
		}
		// vulkan-go's own loader dlopens libvulkan.so, which only the -dev
		// package installs; hand it the loader we opened instead.
		vulkan.SetGetInstanceProcAddr(C.vkamp_get_instance_proc_addr())
		if err := vulkan.Init(); err != nil {
			instance.err = fmt.Errorf("%w: %v", ErrNoVulkan, err)
			return
		}
		validation := ValidationEnabled()
		var inst C.VkInstance
		r := C.vkamp_create_instance(cbool(validation), cbool(validation && !envBool("VKAMP_NO_SYNC_VALIDATION")), &inst)
		if err := check(int32(r), "create instance"); err != nil {
			if Result(r).Is(ErrLayerNotPresent) || Result(r).Is(ErrExtensionMissing) {
				err = fmt.Errorf("%w (VKAMP_VALIDATION is set: install the vulkan-validationlayers package)", err)
			}
			if Result(r).Is(ErrIncompatibleDriver) {
				err = fmt.Errorf("%w (no Vulkan 1.1 driver: install mesa-vulkan-drivers or your GPU vendor's driver)", err)
			}
			instance.err = err
			return
		}
		// vulkan-go resolves instance functions with a NULL instance until
		// told the real one (vulkan-go issue #39).
		if err := vulkan.InitInstance(vulkan.Instance(unsafe.Pointer(inst))); err != nil {
			instance.err = fmt.Errorf("%w: %v", ErrInitialization, err)
			return
		}
		instance.handle = inst
		instance.validation = validation
	})
	return instance.handle, instance.err
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// Validation messages arrive from the layer on whichever thread made the
// Vulkan call; they are kept here until a test takes them.
var validation struct {
	mu       sync.Mutex
	messages []string
	total    int
}

//export vkampDebugMessage
func vkampDebugMessage(severity C.int, msg *C.char) {
	level := "warning"
	if severity >= C.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT {
		level = "error"
	}
	s := level + ": " + C.GoString(msg)
	validation.mu.Lock()
	defer validation.mu.Unlock()
	validation.total++
	if len(validation.messages) < 1000 {
		validation.messages = append(validation.messages, s)
	}
}

// ValidationMessages returns the warnings and errors the validation layer has
// reported since the last call, and forgets them.
func ValidationMessages() []string {
	validation.mu.Lock()
	defer validation.mu.Unlock()
	m := validation.messages
	validation.messages = nil
	return m
}
