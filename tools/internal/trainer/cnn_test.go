package trainer_test

import (
	"context"
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tools/internal/trainer"
)

// TestCNN: PyTorch's examples/mnist network learns: 16 Adadelta steps on
// 256 digits lift the test accuracy well above chance, in fp16 AMP and in
// fp32, and the learning rate decays by 0.7 per epoch.
func TestCNN(t *testing.T) {
	d := devtest.Open(t)
	if !full(d) {
		t.Skip("the CNN's learning test runs on lavapipe and GPUs (minutes on SwiftShader); TestCNNResume runs the CNN here")
	}
	train, test := load(t)
	for _, fp16 := range []bool{true, false} {
		tr := newTrainer(t, trainer.Options{Device: d, Train: train.Subset(256), Test: test.Subset(200), Model: "cnn",
			Batch: 16, FP16: fp16, Seed: 3})
		before, err := tr.Evaluate(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		e := epoch(t, tr)
		t.Logf("fp16=%v: accuracy %.3f before, %.3f after one epoch of %d steps (loss %.4f, scale %g, %.0f samples/s)",
			fp16, before, e.TestAccuracy, 256/16, e.TrainLoss, e.Scale, float64(e.Samples)/e.Duration.Seconds())
		if math.IsNaN(e.TrainLoss) || e.TestAccuracy < 0.4 || e.TestAccuracy < before+0.25 {
			t.Errorf("fp16=%v: accuracy %.3f after training, %.3f before", fp16, e.TestAccuracy, before)
		}
		if lr := tr.LR(); math.Abs(lr-0.7) > 1e-12 {
			t.Errorf("learning rate of the second epoch %g, want 0.7", lr)
		}
	}
}

// TestCNNResume: a CNN epoch interrupted after 3 of its 8 steps, saved and
// resumed in a new trainer ends bit for bit where the uninterrupted one
// does (weights, Adadelta's averages, the dropout masks drawn after the
// resume).
func TestCNNResume(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	batch := 8
	if !full(d) {
		batch = 2 // SwiftShader: 16 digits
	}
	o := trainer.Options{Device: d, Train: train.Subset(8 * batch), Test: test.Subset(2 * batch), Model: "cnn", Batch: batch, FP16: true, Seed: 5}
	straight := newTrainer(t, o)
	epoch(t, straight)
	want := readAll(t, straight.Params())

	dir := t.TempDir()
	first := newTrainer(t, o)
	ctx, cancel := context.WithCancel(context.Background())
	first.SetOnStep(func(s trainer.Step) {
		if s.Index == 2 {
			cancel()
		}
	})
	if _, err := first.Epoch(ctx); err != context.Canceled {
		t.Fatalf("interrupted epoch: %v", err)
	}
	if err := first.Save(dir, nil); err != nil {
		t.Fatal(err)
	}
	resumed := newTrainer(t, o)
	if _, err := resumed.Load(dir); err != nil {
		t.Fatal(err)
	}
	if e := epoch(t, resumed); e.Samples != (8-3)*batch {
		t.Errorf("the resumed epoch ran %d samples, want the 5 steps left", e.Samples)
	}
	got := readAll(t, resumed.Params())
	for i := range want {
		for j := range want[i] {
			if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
				t.Fatalf("parameter %d element %d: resumed %g, uninterrupted %g", i, j, got[i][j], want[i][j])
			}
		}
	}
	// The MLP cannot resume the CNN's checkpoint.
	mlp := newTrainer(t, trainer.Options{Device: d, Train: o.Train, Test: o.Test, Batch: batch, FP16: true})
	if _, err := mlp.Load(dir); err == nil {
		t.Error("the MLP loaded the CNN's checkpoint")
	}
}
