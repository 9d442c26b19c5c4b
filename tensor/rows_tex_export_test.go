package tensor

// WithoutRowTexels runs f with the row kernels' texel forms off, so that
// tests can compare them with the storage-buffer forms.
func WithoutRowTexels(f func()) {
	rowTexelsOff = true
	defer func() { rowTexelsOff = false }()
	f()
}

// WithTexGroups runs f with the texel forms' workgroups capped at n, so
// that tests can make invocations loop over many rows with small tensors.
func WithTexGroups(n int, f func()) {
	was := texGroups
	texGroups = n
	defer func() { texGroups = was }()
	f()
}
