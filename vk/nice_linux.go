//go:build cgo && linux

package vk

import "syscall"

// lowerThreadPriority makes the calling OS thread yield to the others
// (nice 19: Linux's priority is per thread); an error leaves it as it is.
func lowerThreadPriority() { _ = syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19) }
