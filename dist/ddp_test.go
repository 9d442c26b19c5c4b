package dist_test

import (
	"math"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
)

const steps = 8

// TestLocalMatchesSingle: two ranks in one process, each with half of
// every global batch, train as one device with the whole batch does: in
// fp32 to rounding (2.2e-8 measured on lavapipe, the sums' order), in fp16
// AMP within 1e-3 (2.3e-4 measured: a half batch's weight gradient is
// rounded to fp16 before the ranks' are summed, the whole one after). SGD
// with momentum, 8 steps at lr 0.05.
func TestLocalMatchesSingle(t *testing.T) {
	useSGD(t)
	set := loadMNIST(t)
	for _, c := range []struct {
		name string
		amp  bool
		tol  float64
	}{{"fp32", false, 1e-6}, {"fp16", true, 1e-3}} {
		t.Run(c.name, func(t *testing.T) {
			autocast = c.amp
			t.Cleanup(func() { autocast = true })
			ref, err := train(devtest.Open(t), dist.Single{}, set, steps, nil)
			if err != nil {
				t.Fatal(err)
			}
			runs := trainLocal(t, openDevices(t, 2), set, steps, nil)
			if d := maxDiff(runs[0].weights, runs[1].weights); d != 0 {
				t.Errorf("ranks 0 and 1 differ by %g", d)
			}
			d := maxDiff(runs[0].weights, ref.weights)
			t.Logf("largest weight difference from one device: %g", d)
			if d > c.tol {
				t.Errorf("data-parallel weights differ from one device's by %g, over %g", d, c.tol)
			}
			for i := range steps {
				mean := (runs[0].losses[i] + runs[1].losses[i]) / 2
				if math.Abs(float64(mean-ref.losses[i])) > 1e-3 {
					t.Errorf("step %d: mean loss of the ranks %g, one device's %g", i, mean, ref.losses[i])
				}
			}
			if ref.losses[steps-1] >= ref.losses[0] {
				t.Errorf("loss did not fall: %v", ref.losses)
			}
		})
	}
}

// TestLocalPlantedInf: an inf in one rank's gradient makes every rank skip
// that step, planted before the all-reduce (the mean carries it) or after
// it (only the combined inf check carries it).
func TestLocalPlantedInf(t *testing.T) {
	set := loadMNIST(t)
	ds := openDevices(t, 2)
	runs := trainLocal(t, ds, set, 4, []plant{{rank: 1, step: 1}, {rank: 0, step: 2, afterReduce: true}})
	want := []bool{false, true, true, false}
	for i, r := range runs {
		if !slices.Equal(r.skipped, want) {
			t.Errorf("rank %d skipped %v, want %v", i, r.skipped, want)
		}
	}
	if d := maxDiff(runs[0].weights, runs[1].weights); d != 0 {
		t.Errorf("ranks 0 and 1 differ by %g", d)
	}
}

// useSGD makes the test's runs use SGD with momentum: its step is linear in
// the gradient, so the order of the sums shows as a rounding difference
// (Adam's divides by the gradient's root, and a gradient near 0 can flip
// its step's sign, by lr).
func useSGD(t *testing.T) {
	old := newOpt
	newOpt = func(params []*nn.Param) (optimizer, error) {
		return nn.NewSGD(params, nn.SGDOptions{LR: 0.05, Momentum: 0.9})
	}
	t.Cleanup(func() { newOpt = old })
}
