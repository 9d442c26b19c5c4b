//go:build cgo && !linux

package vk

func lowerThreadPriority() {}
