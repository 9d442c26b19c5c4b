package trainer_test

import (
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/tools/internal/trainer"
)

// TestInput16: under autocast a batch is uploaded in the autocast dtype,
// rounded on the host, and the trained weights are bit for bit those of
// fp32 batches the device casts (the first layer's cast), for both models
// and both autocast dtypes; fp32 runs upload fp32.
func TestInput16(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	batch := 16
	if !full(d) {
		batch = 4 // SwiftShader: the CNN takes minutes on bigger batches
	}
	for _, c := range []struct {
		model      string
		fp16, bf16 bool
		want       tensor.DType
	}{
		{"mlp", true, false, tensor.Float16}, {"mlp", false, true, tensor.BFloat16}, {"mlp", false, false, tensor.Float32},
		{"cnn", true, false, tensor.Float16}, {"cnn", false, true, tensor.BFloat16},
	} {
		o := trainer.Options{Device: d, Train: train.Subset(4 * batch), Test: test.Subset(batch), Model: c.model,
			Batch: batch, FP16: c.fp16, BF16: c.bf16, Seed: 9}
		run := func() (tensor.DType, [][]float32) {
			tr := newTrainer(t, o)
			epoch(t, tr)
			return tr.InputDType(), readAll(t, tr.Params())
		}
		dt, got := run()
		restore := trainer.UploadFP32()
		dt32, want := run()
		restore()
		if dt != c.want || dt32 != tensor.Float32 {
			t.Errorf("%s fp16=%v bf16=%v: input %s (%s with UploadFP32), want %s", c.model, c.fp16, c.bf16, dt, dt32, c.want)
		}
		for i := range want {
			if !bitsEqual(got[i], want[i]) {
				t.Errorf("%s fp16=%v bf16=%v: parameter %d differs from the run whose device cast fp32 batches", c.model, c.fp16, c.bf16, i)
			}
		}
	}
}

// bitsEqual reports whether a and b hold the same float32 bit patterns.
func bitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}
