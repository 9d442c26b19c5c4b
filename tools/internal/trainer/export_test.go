package trainer

import "github.com/vkamp/vkamp/tensor"

// UploadFP32 makes the trainers built until restore is called upload fp32
// batches under autocast, the device casting them: the reference the
// 16-bit upload must match.
func UploadFP32() (restore func()) {
	uploadFP32 = true
	return func() { uploadFP32 = false }
}

// HostBatches makes the trainers built until restore is called write each
// batch's rows from the host (a CPU driver's way, or a training set the
// device cannot hold): the reference the device's gather must match.
func HostBatches() (restore func()) {
	batchesOn = onHost
	return func() { batchesOn = onAuto }
}

// DeviceBatches makes the trainers built until restore is called keep the
// training set on the device and gather each batch there (a GPU's way),
// on any driver.
func DeviceBatches() (restore func()) {
	batchesOn = onDevice
	return func() { batchesOn = onAuto }
}

// InputDType is the dtype of t's input batch.
func (t *Trainer) InputDType() tensor.DType {
	if t.io.data != nil {
		return t.io.data.DType()
	}
	return t.io.x.DType()
}
