package tensor

// WithoutPool2x2 runs f with pooling's two-by-two texel forms off, so that
// tests can compare them with the general kernels.
func WithoutPool2x2(f func()) {
	pool2x2Off = true
	defer func() { pool2x2Off = false }()
	f()
}
