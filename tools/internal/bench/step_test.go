package bench

import (
	"errors"
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/vk"
)

func load(t *testing.T) (*mnist.Set, *mnist.Set) {
	t.Helper()
	train, test, err := mnist.Load("../../../testdata/mnist")
	if err != nil {
		t.Fatal(err)
	}
	return train, test
}

// TestStepShare runs the measurement briefly and checks that its report
// adds up; it asserts nothing about speed.
func TestStepShare(t *testing.T) {
	plain := devtest.Open(t)
	train, test := load(t)
	o := StepOptions{Batch: 64, Steps: 3, Warmup: 2}
	if _, err := StepShare(plain, train, test, o); !errors.Is(err, errNoTimestamps) {
		t.Errorf("without timestamps: %v, want %v", err, errNoTimestamps)
	}
	if !plain.Info().Timestamps {
		t.Skipf("%s has no timestamps", plain.Info().Name)
	}
	plain.Close()
	d := devtest.Open(t, vk.Options{Timestamps: true})
	r, err := StepShare(d, train, test, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d steps: %v a step, %v in kernels (%.0f%%), %g dispatches", r.Steps, r.Wall, r.Kernel, 100*r.Share(), r.Dispatches)
	if r.Wall <= 0 || r.Kernel <= 0 || r.Dispatches < 1 || r.Batch != o.Batch || r.Steps != o.Steps {
		t.Errorf("report %+v: want positive times and dispatches", r)
	}
	// A CPU device runs the dispatches of a queue one after another, all
	// inside the window; a GPU may overlap those with no barrier between.
	if s := r.Share(); s <= 0 || (s > 1 && d.Info().Type == vk.TypeCPU) {
		t.Errorf("kernel share %g out of (0, 1]", s)
	}
	count, ns := 0, 0.0
	for _, kt := range r.Kernels {
		count += kt.Count
		ns += kt.Nanoseconds
	}
	if want := r.Dispatches * float64(r.Steps); math.Abs(float64(count)-want) > 0.5 {
		t.Errorf("%d dispatches timed, want every one of %g", count, want)
	}
	if per := ns / float64(r.Steps); per < 0.99*float64(r.Kernel) || per > 1.01*float64(r.Kernel) {
		t.Errorf("kernels add up to %g ns a step, the total says %d", per, r.Kernel)
	}
	if len(StepResults(r)) == 0 {
		t.Error("no results")
	}
}

func TestTile(t *testing.T) {
	s := &mnist.Set{Images: []float32{1, 2, 3}, Labels: []uint8{7, 8, 9}, N: 3, Rows: 1, Cols: 1}
	got := tile(s, 7)
	want := []uint8{7, 8, 9, 7, 8, 9, 7}
	if got.N != 7 || len(got.Images) != 7 || string(got.Labels) != string(want) || got.Images[6] != 1 {
		t.Errorf("tile: %+v", got)
	}
	if small := tile(s, 2); small.N != 2 || len(small.Labels) != 2 {
		t.Errorf("tile to fewer: %+v", small)
	}
}
