package scaler

import "github.com/vkamp/vkamp/tensor"

// Flag returns the one-element Float32 device tensor the step read, non-zero
// when it was skipped, or nil when no flag was made (a disabled scaler). It
// is the scaler's: copy it (CopyFrom) to keep it, since a later step writes
// it again. A loop that replays a captured step (tensor.Replayer) reads the
// skips this way: the replay writes the flag its capture recorded, and no
// Skipped is returned for it.
func (k Skipped) Flag() *tensor.Tensor { return k.found }
