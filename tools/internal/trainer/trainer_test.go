package trainer_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/tools/internal/trainer"
	"github.com/vkamp/vkamp/vk"
)

func load(t testing.TB) (*mnist.Set, *mnist.Set) {
	t.Helper()
	train, test, err := mnist.Load("../../../testdata/mnist")
	if err != nil {
		t.Fatal(err)
	}
	return train, test
}

func newTrainer(t testing.TB, o trainer.Options) *trainer.Trainer {
	t.Helper()
	tr, err := trainer.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func epoch(t testing.TB, tr *trainer.Trainer) trainer.Epoch {
	t.Helper()
	e, err := tr.Epoch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// full reports whether the device is fast enough for the full recipe in CI:
// lavapipe is; SwiftShader, and -short runs, get a smaller one.
func full(d *vk.Device) bool {
	return !testing.Short() && strings.Contains(strings.ToLower(d.Info().DriverName), "llvmpipe") || d.Info().Type != vk.TypeCPU
}

// TestMNIST is the end-to-end proof: the 784-256-10 MLP with fp16 AMP
// (Adam, lr 1e-3, batch 64) reaches 94% test accuracy after 5 epochs, within
// half a point of the same run in fp32.
func TestMNIST(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	epochs, minAcc, maxGap := 5, 0.94, 0.005
	if !full(d) {
		train, test = train.Subset(2000), test.Subset(1000)
		epochs, minAcc, maxGap = 2, 0.85, 0.02
	}
	acc := map[bool]float64{}
	for _, fp16 := range []bool{true, false} {
		tr := newTrainer(t, trainer.Options{Device: d, Train: train, Test: test, FP16: fp16, Seed: 7})
		var e trainer.Epoch
		before := d.Stats()
		for range epochs {
			e = epoch(t, tr)
			t.Logf("fp16=%v epoch %d: loss %.4f accuracy %.4f scale %g skipped %d, %.0f samples/s",
				fp16, e.Epoch, e.TrainLoss, e.TestAccuracy, e.Scale, e.Skipped, float64(e.Samples)/e.Duration.Seconds())
		}
		after := d.Stats()
		steps := float64(epochs * (train.N / 64))
		t.Logf("fp16=%v: %.2f submits and %.2f waits per step (epoch-end reads and evaluation included)",
			fp16, float64(after.Submits-before.Submits)/steps, float64(after.Waits-before.Waits)/steps)
		acc[fp16] = e.TestAccuracy
		if math.IsNaN(e.TrainLoss) || e.TestAccuracy < minAcc {
			t.Errorf("fp16=%v: accuracy %.4f (loss %g), want at least %.2f", fp16, e.TestAccuracy, e.TrainLoss, minAcc)
		}
	}
	if gap := math.Abs(acc[true] - acc[false]); gap > maxGap {
		t.Errorf("fp16 accuracy %.4f vs fp32 %.4f: gap %.4f over %.3f", acc[true], acc[false], gap, maxGap)
	}
}

// TestMNISTBF16: bf16 autocast trains without a loss scaler to within two
// points of fp32 on a short run (the 5-epoch figure is tools/train's:
// -precision bf16 against -precision f32).
func TestMNISTBF16(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	train, test = train.Subset(2000), test.Subset(1000)
	acc := map[bool]float64{}
	for _, bf16 := range []bool{true, false} {
		tr := newTrainer(t, trainer.Options{Device: d, Train: train, Test: test, BF16: bf16, Seed: 7})
		var e trainer.Epoch
		for range 2 {
			e = epoch(t, tr)
		}
		t.Logf("bf16=%v: loss %.4f accuracy %.4f, %.0f samples/s", bf16, e.TrainLoss, e.TestAccuracy, float64(e.Samples)/e.Duration.Seconds())
		if e.Skipped != 0 {
			t.Errorf("bf16=%v: %d steps skipped without a scaler", bf16, e.Skipped)
		}
		acc[bf16] = e.TestAccuracy
	}
	if acc[true] < 0.85 || math.Abs(acc[true]-acc[false]) > 0.02 {
		t.Errorf("bf16 accuracy %.4f vs fp32 %.4f: want at least 0.85 and within 0.02", acc[true], acc[false])
	}
	if _, err := trainer.New(trainer.Options{Device: d, Train: train, Test: test, FP16: true, BF16: true}); err == nil {
		t.Error("fp16 and bf16 together: no error")
	}
}

// TestPlantedInf: an inf planted in one gradient mid-training skips that
// step: the weights stay bit-identical across it, the scale halves, and
// training recovers.
func TestPlantedInf(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	const at = 5
	var before, after [][]float32
	var scaleBefore float64
	var tr *trainer.Trainer
	tr = newTrainer(t, trainer.Options{Device: d, Train: train.Subset(640), Test: test.Subset(500), FP16: true, Seed: 3,
		AfterBackward: func(step int, params []*nn.Param) {
			if step != at {
				return
			}
			before = readAll(t, params)
			scaleBefore, _ = tr.Scaler().ScaleValue()
			plantInf(t, params[0].Grad)
		},
		OnStep: func(s trainer.Step) {
			if s.Index != at {
				return
			}
			after = readAll(t, tr.Params())
			if v, err := s.Skipped.Value(); !v || err != nil {
				t.Errorf("step %d with an inf was not skipped (%v)", at, err)
			}
		}})
	e := epoch(t, tr)
	for i := range before {
		for j := range before[i] {
			if math.Float32bits(before[i][j]) != math.Float32bits(after[i][j]) {
				t.Fatalf("parameter %d element %d changed in the skipped step", i, j)
			}
		}
	}
	scale, _ := tr.Scaler().ScaleValue()
	t.Logf("scale %g before the inf, %g at the end; epoch %+v", scaleBefore, scale, e)
	if scale != scaleBefore/2 {
		t.Errorf("scale %g after the overflow, want %g", scale, scaleBefore/2)
	}
	if e.Skipped != 1 || math.IsNaN(e.TrainLoss) || e.TestAccuracy < 0.6 {
		t.Errorf("after the skip: %d skipped, loss %g, accuracy %.3f: training did not recover", e.Skipped, e.TrainLoss, e.TestAccuracy)
	}
}

func readAll(t testing.TB, ps []*nn.Param) [][]float32 {
	var out [][]float32
	for _, p := range ps {
		v, err := p.Value.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func plantInf(t testing.TB, g *tensor.Tensor) {
	raw, err := g.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	copy(raw[4*100:], []byte{0x00, 0x00, 0x80, 0x7F}) // +inf, little-endian
	if err := g.SetBytes(raw); err != nil {
		t.Fatal(err)
	}
}

// TestScaleGrows: past the growth interval the scale doubles.
func TestScaleGrows(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	tr := newTrainer(t, trainer.Options{Device: d, Train: train.Subset(640), Test: test.Subset(100), FP16: true, Seed: 4,
		Scaler: scaler.Options{InitScale: 256, GrowthInterval: 3}})
	e := epoch(t, tr) // 10 steps: growth after steps 3, 6 and 9
	if want := 256.0 * 8; e.Scale != want || e.Skipped != 0 {
		t.Errorf("scale %g with %d skipped steps, want %g and none", e.Scale, e.Skipped, want)
	}
}

// TestStepCosts: after the first step, an AMP step (forward, loss, scaled
// backward, fused unscale and check, optimizer with device-side skip, scale
// update) records no host wait, takes part in at most one submission, and
// creates no pipeline, memory block or memory allocation; device memory and
// live buffers stay the same.
func TestStepCosts(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	var at []vk.Stats // after each step
	tr := newTrainer(t, trainer.Options{Device: d, Train: train.Subset(64 * 60), Test: test.Subset(100), FP16: true, Seed: 5,
		OnStep: func(trainer.Step) { at = append(at, d.Stats()) }})
	epoch(t, tr)
	first, last := at[0], at[len(at)-1]
	steps := uint64(len(at) - 1)
	t.Logf("over %d steps: %d submits, %d waits, %d stalls, %d dispatches, %d barriers, %d copies; device memory %d then %d bytes, buffers %d then %d",
		steps, last.Submits-first.Submits, last.Waits-first.Waits, last.Stalls-first.Stalls, last.Dispatches-first.Dispatches,
		last.Barriers-first.Barriers, last.Copies-first.Copies, first.DeviceBytes, last.DeviceBytes, first.LiveBuffers, last.LiveBuffers)
	for i := 1; i < len(at); i++ {
		checkStep(t, i, at[i-1], at[i])
	}
	// Every dispatch writes one descriptor set, allocated from its batch's
	// pool, which is reset when the batch's command buffer is reused: no
	// pool is created after Open, and set layouts come with pipelines.
	if sets, n := last.DescriptorSets-first.DescriptorSets, last.Dispatches-first.Dispatches; sets != n {
		t.Errorf("%d descriptor sets written for %d dispatches, want one each", sets, n)
	}
	if last.Pipelines != first.Pipelines || last.Allocations != first.Allocations || last.MemoryBlocks != first.MemoryBlocks {
		t.Errorf("pipelines, memory allocations or blocks made after the first step: %+v -> %+v", first, last)
	}
	if last.DeviceBytes != first.DeviceBytes || last.LiveBuffers != first.LiveBuffers {
		t.Errorf("device memory or live buffers grew after the first step: %+v -> %+v", first, last)
	}
}

// checkStep checks the counters of one step. Stalls (waits for a free
// command buffer) are allowed: they only hold the host back to the device's
// pace. A batch holds several steps, so most steps submit nothing.
func checkStep(t *testing.T, i int, before, after vk.Stats) {
	t.Helper()
	if n := after.Waits - before.Waits; n != 0 {
		t.Errorf("step %d: %d host waits, want none (no loss is read)", i, n)
	}
	if n := after.Submits - before.Submits; n > 1 {
		t.Errorf("step %d: %d submits, want at most one", i, n)
	}
	if after.Dispatches == before.Dispatches {
		t.Errorf("step %d recorded no dispatch", i)
	}
}

// TestResume: training resumed from a checkpoint reaches the same weights,
// bit for bit, as an uninterrupted run.
func TestResume(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	o := trainer.Options{Device: d, Train: train.Subset(640), Test: test.Subset(100), FP16: true, Seed: 6}
	straight := newTrainer(t, o)
	epoch(t, straight)
	epoch(t, straight)
	want := readAll(t, straight.Params())

	dir := t.TempDir()
	first := newTrainer(t, o)
	epoch(t, first)
	// Interrupt the second epoch after 3 steps, save, and resume elsewhere.
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
	if e := epoch(t, resumed); e.Samples != (10-3)*64 {
		t.Errorf("the resumed epoch ran %d samples, want the 7 steps left", e.Samples)
	}
	got := readAll(t, resumed.Params())
	for i := range want {
		for j := range want[i] {
			if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
				t.Fatalf("parameter %d element %d: resumed %g, uninterrupted %g", i, j, got[i][j], want[i][j])
			}
		}
	}
}

// TestCheckpointEvery: with a checkpoint every 4 steps, a run killed in its
// second epoch (stopped after step 7 of 10, with no save) resumes from the
// checkpoint of step 16, inside the epoch, and reaches the uninterrupted
// run's weights and epoch loss bit for bit. No checkpoint is taken on an
// epoch's last step: the caller's epoch-end save is that one.
func TestCheckpointEvery(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	o := trainer.Options{Device: d, Train: train.Subset(640), Test: test.Subset(100), FP16: true, Seed: 8}
	straight := newTrainer(t, o)
	epoch(t, straight)
	last := epoch(t, straight)
	want := readAll(t, straight.Params())

	dir := t.TempDir()
	first := newTrainer(t, o)
	var saves []int
	first.SetCheckpointEvery(4, func() error {
		saves = append(saves, first.StepsDone())
		return first.Save(dir, nil)
	})
	epoch(t, first)
	ctx, cancel := context.WithCancel(context.Background())
	first.SetOnStep(func(s trainer.Step) {
		if s.Index == 7 {
			cancel() // the kill: no save after this
		}
	})
	if _, err := first.Epoch(ctx); err != context.Canceled {
		t.Fatalf("interrupted epoch: %v", err)
	}
	if !slices.Equal(saves, []int{4, 8, 12, 16}) {
		t.Errorf("checkpoints after steps %v, want 4, 8, 12 and 16", saves)
	}

	resumed := newTrainer(t, o)
	if _, err := resumed.Load(dir); err != nil {
		t.Fatal(err)
	}
	if resumed.EpochsDone() != 1 || resumed.StepInEpoch() != 6 || resumed.StepsDone() != 16 {
		t.Errorf("resumed at epoch %d, step %d in it, %d in all; want 1, 6 and 16",
			resumed.EpochsDone(), resumed.StepInEpoch(), resumed.StepsDone())
	}
	e := epoch(t, resumed)
	if e.Samples != (10-6)*64 {
		t.Errorf("the resumed epoch ran %d samples, want the 4 steps left", e.Samples)
	}
	if math.Float64bits(e.TrainLoss) != math.Float64bits(last.TrainLoss) {
		t.Errorf("resumed epoch loss %v, uninterrupted %v", e.TrainLoss, last.TrainLoss)
	}
	got := readAll(t, resumed.Params())
	for i := range want {
		for j := range want[i] {
			if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
				t.Fatalf("parameter %d element %d: resumed %g, uninterrupted %g", i, j, got[i][j], want[i][j])
			}
		}
	}

	// A failed checkpoint stops the epoch with its error.
	boom := errors.New("boom")
	failing := newTrainer(t, o)
	failing.SetCheckpointEvery(3, func() error { return boom })
	if _, err := failing.Epoch(context.Background()); !errors.Is(err, boom) || failing.StepsDone() != 3 {
		t.Errorf("failing checkpoint: %v after %d steps, want %v after 3", err, failing.StepsDone(), boom)
	}
}

// TestResumeOtherData: a checkpoint resumed on other data is an error
// naming the difference (another batch, a set of another size, the same
// size with other labels), where it used to train on with its epoch
// position meaning other samples; the same data resumes.
func TestResumeOtherData(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	o := trainer.Options{Device: d, Train: train.Subset(640), Test: test.Subset(100), FP16: true, Seed: 6}
	first := newTrainer(t, o)
	epoch(t, first)
	dir := t.TempDir()
	if err := first.Save(dir, nil); err != nil {
		t.Fatal(err)
	}
	relabelled := *train.Subset(640)
	relabelled.Labels = slices.Clone(relabelled.Labels)
	relabelled.Labels[5] = (relabelled.Labels[5] + 1) % 10
	for _, c := range []struct {
		name string
		edit func(*trainer.Options)
		want string
	}{
		{"another batch", func(o *trainer.Options) { o.Batch = 32 }, "batch 64 in the checkpoint, 32 now"},
		{"a larger set", func(o *trainer.Options) { o.Train = train.Subset(1280) }, "640 training samples in the checkpoint, 1280 now"},
		{"other labels", func(o *trainer.Options) { o.Train = &relabelled }, "checksum"},
	} {
		oc := o
		c.edit(&oc)
		if _, err := newTrainer(t, oc).Load(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if _, err := newTrainer(t, o).Load(dir); err != nil {
		t.Errorf("the same data: %v", err)
	}
}

// TestResumeInEvaluation: an epoch stopped in its evaluation (every step
// done) saves a checkpoint whose resumed epoch only evaluates, and reports
// the uninterrupted epoch's loss and accuracy with its weights, bit for bit.
func TestResumeInEvaluation(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	o := trainer.Options{Device: d, Train: train.Subset(640), Test: test.Subset(1000), FP16: true, Seed: 6}
	straight := newTrainer(t, o)
	epoch(t, straight)
	want := epoch(t, straight)
	wantW := readAll(t, straight.Params())

	dir := t.TempDir()
	first := newTrainer(t, o)
	epoch(t, first)
	ctx, cancel := context.WithCancel(context.Background())
	first.SetOnStep(func(s trainer.Step) {
		if s.Index == s.Steps-1 {
			cancel() // after the last step: the evaluation sees it
		}
	})
	if _, err := first.Epoch(ctx); err != context.Canceled {
		t.Fatalf("the epoch stopped in its evaluation: %v", err)
	}
	if err := first.Save(dir, nil); err != nil {
		t.Fatal(err)
	}
	resumed := newTrainer(t, o)
	if _, err := resumed.Load(dir); err != nil {
		t.Fatal(err)
	}
	got := epoch(t, resumed)
	if got.Samples != 0 || got.TrainLoss != want.TrainLoss || got.TestAccuracy != want.TestAccuracy || got.Epoch != want.Epoch {
		t.Errorf("resumed epoch %+v, uninterrupted %+v", got, want)
	}
	gotW := readAll(t, resumed.Params())
	for i := range wantW {
		if !slices.Equal(gotW[i], wantW[i]) {
			t.Errorf("parameter %d differs from the uninterrupted run's", i)
		}
	}
}
