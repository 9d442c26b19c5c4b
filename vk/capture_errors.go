package vk

import "errors"

// Errors of captures (capture.go).
var (
	// ErrCapturing is returned by what a capture cannot record: host reads
	// and writes of buffers, a second BeginCapture.
	ErrCapturing = errors.New("vk: not allowed while capturing")
	// ErrStaleGraph is returned by Replay of a graph whose buffers were
	// freed, or that was closed.
	ErrStaleGraph = errors.New("vk: graph is stale")
)
