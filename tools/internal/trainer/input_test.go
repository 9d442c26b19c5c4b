package trainer_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/tools/internal/trainer"
	"github.com/vkamp/vkamp/vk"
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

// TestDataOnDevice: with the training set on the device, each batch
// gathered there from the indices the host writes (a GPU's way, forced
// here on every driver), the trained weights are bit for bit those of
// batches whose rows the host gathers and writes (a CPU driver's way, and
// a training set the device cannot hold), recorded and replayed, for both
// models, fp16 AMP and fp32; a CPU driver chooses the host's gather.
func TestDataOnDevice(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	batch := 16
	if !full(d) {
		batch = 4
	}
	for _, c := range []struct {
		model        string
		fp16, replay bool
	}{
		{"mlp", true, false}, {"mlp", true, true}, {"mlp", false, false}, {"cnn", true, true},
	} {
		name := fmt.Sprintf("%s fp16=%v replay=%v", c.model, c.fp16, c.replay)
		o := trainer.Options{Device: d, Train: train.Subset(6 * batch), Test: test.Subset(batch), Model: c.model,
			Batch: batch, FP16: c.fp16, Seed: 5, Replay: c.replay}
		run := func(force func() func()) (bool, string, [][]float32) {
			defer force()()
			tr := newTrainer(t, o)
			epoch(t, tr)
			on, why := tr.DataOnDevice()
			return on, why, readAll(t, tr.Params())
		}
		on, why, got := run(trainer.DeviceBatches)
		hostOn, hostWhy, want := run(trainer.HostBatches)
		if !on || why != "" || hostOn || hostWhy == "" {
			t.Errorf("%s: DataOnDevice %v %q, with HostBatches %v %q; want true \"\", then false and a reason", name, on, why, hostOn, hostWhy)
		}
		for i := range want {
			if !bitsEqual(got[i], want[i]) {
				t.Errorf("%s: parameter %d differs from the run whose host gathered each batch", name, i)
			}
		}
	}
	tr := newTrainer(t, trainer.Options{Device: d, Train: train.Subset(batch), Test: test.Subset(batch), Batch: batch})
	if on, why := tr.DataOnDevice(); on != (d.Info().Type != vk.TypeCPU) || on != (why == "") {
		t.Errorf("%s (%v): DataOnDevice %v %q; want the device's gather on GPUs only", d.Info().Name, d.Info().Type, on, why)
	}
}
