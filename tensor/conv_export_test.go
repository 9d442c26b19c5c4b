package tensor

// SetConvPassSamples caps the samples of a convolution's pass at n (at
// least 2), as a device with a small maxStorageBufferRange would split the
// work; 0 restores the device's limit.
func SetConvPassSamples(n int) { convPassSamples = n }
