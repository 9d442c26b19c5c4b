package tensor

// WithoutRowTexels runs f with the row kernels' texel forms off, so that
// tests can compare them with the storage-buffer forms.
func WithoutRowTexels(f func()) {
	rowTexelsOff = true
	defer func() { rowTexelsOff = false }()
	f()
}
