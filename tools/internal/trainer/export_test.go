package trainer

import "github.com/vkamp/vkamp/tensor"

// UploadFP32 makes the trainers built until restore is called upload fp32
// batches under autocast, the device casting them: the reference the
// 16-bit upload must match.
func UploadFP32() (restore func()) {
	uploadFP32 = true
	return func() { uploadFP32 = false }
}

// InputDType is the dtype of t's input batch.
func (t *Trainer) InputDType() tensor.DType { return t.io.x.DType() }
