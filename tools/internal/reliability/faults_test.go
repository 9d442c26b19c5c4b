package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/tools/internal/trainer"
	"github.com/vkamp/vkamp/vk"
)

// faultDevice is how every device of the fault test is opened: blocks small
// enough that training keeps allocating (the step's batch and activations
// take dedicated blocks, more than the runtime keeps spare), so that an
// allocation can fail mid-training.
var faultDevice = vk.Options{BlockSize: 4 << 10, BatchSize: 16}

// faultRun is the training the faults interrupt: MNIST's MLP, narrow, on
// 256 samples in batches of 64 (4 steps an epoch), with fp16 AMP.
type faultRun struct {
	train, test *mnist.Set
}

func (r faultRun) options(d *vk.Device) trainer.Options {
	return trainer.Options{Device: d, Train: r.train, Test: r.test, Hidden: 16, Batch: 64, FP16: true, Seed: 11}
}

func (r faultRun) newTrainer(t *testing.T, d *vk.Device) *trainer.Trainer {
	t.Helper()
	tr, err := trainer.New(r.options(d))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

func epoch(t *testing.T, tr *trainer.Trainer) {
	t.Helper()
	if _, err := tr.Epoch(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// kind is one kind of injected fault.
type kind struct {
	name  string
	err   error                   // what the caller must see
	count func(a, b vk.Stats) int // how many events of the kind a clean epoch has
	fault func(n int) vk.Faults   // the fault at the nth event
	// absorbable: the runtime may survive the fault on its own (an
	// allocation that fails is retried once after freeing cached blocks).
	absorbable bool
}

var kinds = []kind{
	{"allocation", vk.ErrOutOfDeviceMemory,
		func(a, b vk.Stats) int { return int(b.Allocations - a.Allocations) },
		func(n int) vk.Faults { return vk.Faults{AllocN: n} }, true},
	{"submit", vk.ErrDeviceLost,
		func(a, b vk.Stats) int { return int(b.Submits - a.Submits) },
		func(n int) vk.Faults { return vk.Faults{SubmitN: n} }, false},
	{"wait", vk.ErrDeviceLost,
		func(a, b vk.Stats) int { return int(b.Waits + b.Stalls - a.Waits - a.Stalls) },
		func(n int) vk.Faults { return vk.Faults{WaitN: n} }, false},
}

// TestFaultsDuringTraining runs two epochs, saving a checkpoint after the
// first, then resumes the second epoch from it on fresh devices with an
// out-of-memory allocation, a lost submit or a lost wait injected at points
// spread over the epoch. Each time the fault's error reaches the caller of
// Epoch without a panic (or, for an allocation the runtime retries after
// freeing its cached blocks, the epoch ends with the uninterrupted run's
// weights); Close works and leaves the validation layer nothing to report
// (it reports objects not destroyed with the device); a Save after a lost
// device fails without harming the checkpoint; and the checkpoint loads
// intact on yet another device, where training resumed from it ends with
// the uninterrupted run's weights, bit for bit.
func TestFaultsDuringTraining(t *testing.T) {
	train, test, err := mnist.Load("../../../testdata/mnist")
	if err != nil {
		t.Fatal(err)
	}
	r := faultRun{train.Subset(256), test.Subset(100)}

	// The uninterrupted run, with the checkpoint after its first epoch.
	ckpt := t.TempDir()
	d := devtest.Open(t, faultDevice)
	tr := r.newTrainer(t, d)
	epoch(t, tr)
	if err := tr.Save(ckpt, nil); err != nil {
		t.Fatal(err)
	}
	saved := readParams(t, tr.Params())
	epoch(t, tr)
	want := readParams(t, tr.Params())
	tr.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// A clean resume: bit-identical, and the events a fault can hit.
	d = devtest.Open(t, faultDevice)
	tr = r.newTrainer(t, d)
	if _, err := tr.Load(ckpt); err != nil {
		t.Fatal(err)
	}
	before := d.Stats()
	epoch(t, tr)
	after := d.Stats()
	sameBits(t, "clean resume", readParams(t, tr.Params()), want)
	tr.Close()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	injected, survived, absorbed := 0, 0, 0
	for _, k := range kinds {
		n := k.count(before, after)
		t.Logf("the resumed epoch has %d %s events", n, k.name)
		if n == 0 {
			t.Errorf("no %s event in the epoch: nothing to inject", k.name)
			continue
		}
		for _, at := range spread(n) {
			injected++
			var hit bool
			ok := t.Run(fmt.Sprintf("%s_%d_of_%d", k.name, at, n), func(t *testing.T) {
				dir := t.TempDir()
				if err := os.CopyFS(dir, os.DirFS(ckpt)); err != nil {
					t.Fatal(err)
				}
				hit = faultAt(t, r, dir, k, at, want)
				resume(t, r, dir, saved, want)
			})
			if ok {
				survived++
				if !hit {
					absorbed++
				}
			}
		}
	}
	t.Logf("%d faults injected, %d survived (%d returned their error to Epoch's caller, %d absorbed by the runtime's retry)",
		injected, survived, survived-absorbed, absorbed)
	if survived-absorbed < len(kinds) {
		t.Errorf("only %d faults reached the caller, want at least one of each kind", survived-absorbed)
	}
}

// spread picks up to three event numbers out of 1..n: the first, the
// middle and the last.
func spread(n int) []int {
	var at []int
	for _, i := range []int{1, (n + 1) / 2, n} {
		if i >= 1 && (len(at) == 0 || i > at[len(at)-1]) {
			at = append(at, i)
		}
	}
	return at
}

// faultAt resumes training from the checkpoint in dir on a fresh device,
// arms the fault and trains the epoch, which must fail with the fault's
// error, or (for a fault the runtime can absorb) end with want. It reports
// whether the error reached the caller.
func faultAt(t *testing.T, r faultRun, dir string, k kind, at int, want [][]float32) bool {
	d := devtest.Open(t, faultDevice)
	tr := r.newTrainer(t, d)
	if _, err := tr.Load(dir); err != nil {
		t.Fatal(err)
	}
	d.InjectFaults(k.fault(at))
	p, err := call(func() error { _, err := tr.Epoch(context.Background()); return err })
	switch {
	case p != nil:
		t.Fatalf("Epoch panicked on the %s fault at event %d: %v", k.name, at, p)
	case err == nil && k.absorbable:
		t.Logf("the runtime absorbed the %s fault", k.name)
		sameBits(t, "after an absorbed fault", readParams(t, tr.Params()), want)
	case !errors.Is(err, k.err):
		t.Fatalf("Epoch with the %s fault at event %d returned %v, want %v", k.name, at, err, k.err)
	default:
		t.Logf("Epoch returned: %v", err)
	}
	if errors.Is(err, vk.ErrDeviceLost) {
		if err := tr.Save(dir, nil); !errors.Is(err, vk.ErrDeviceLost) {
			t.Errorf("Save on a lost device returned %v, want %v", err, vk.ErrDeviceLost)
		}
	}
	if p, err := call(tr.Close); p != nil || err != nil {
		t.Errorf("trainer Close after the fault: panic %v, error %v", p, err)
	}
	if err := d.Close(); err != nil && !errors.Is(err, vk.ErrDeviceLost) {
		t.Errorf("device Close after the fault: %v", err)
	}
	devtest.CheckValidation(t)
	return err != nil
}

// resume loads the checkpoint in dir on a fresh device, checks it holds the
// weights it was saved with, trains the epoch and checks the weights
// against the uninterrupted run's.
func resume(t *testing.T, r faultRun, dir string, saved, want [][]float32) {
	d := devtest.Open(t, faultDevice)
	tr := r.newTrainer(t, d)
	if _, err := tr.Load(dir); err != nil {
		t.Fatalf("the checkpoint written before the fault: %v", err)
	}
	sameBits(t, "loaded checkpoint", readParams(t, tr.Params()), saved)
	epoch(t, tr)
	sameBits(t, "resumed run", readParams(t, tr.Params()), want)
}
