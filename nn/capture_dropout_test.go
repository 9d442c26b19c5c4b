package nn_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// TestCaptureDropoutSeed: a step whose graph draws its dropout seed on the
// host does other work each step (the seed is a push constant), so the
// Replayer never replays it for another step (its masks would repeat):
// every step has the gradient of the same step recorded on its own. The
// same step reading its seed from Options.DeviceSeed is captured and
// replayed, with the gradients of the recorded steps.
func TestCaptureDropoutSeed(t *testing.T) {
	d := devtest.Open(t)
	w := tParam(t, d, "w", tRand(256, 5, 1, f32), 16, 16)
	seedT := tensor.New(d, tensor.Int32, 1)
	defer seedT.Release()
	step := func(o nn.Options) func() error {
		return func() error {
			g := nn.NewGraph(d, o)
			defer g.Release()
			if err := w.ZeroGrad(); err != nil {
				return err
			}
			return g.Sum(g.Dropout(g.Param(w), 0.5)).Backward()
		}
	}

	rp := tensor.NewReplayer(d)
	defer rp.Close()
	src, ref := nn.NewSeedSource(7), nn.NewSeedSource(7)
	for i := range 4 {
		if err := rp.Step("drawn", step(nn.Options{Seeds: src})); err != nil {
			t.Fatalf("drawn seed, step %d: %v", i, err)
		}
		got := tRead(t, w.Grad)
		if err := step(nn.Options{Seeds: ref})(); err != nil {
			t.Fatal(err)
		}
		tSameBits(t, fmt.Sprintf("drawn seed, step %d", i), got, tRead(t, w.Grad))
	}
	// Recorded, captured (and run once, as itself), then recorded again.
	if rp.Replayed != 0 || rp.Diverted != 2 || !strings.Contains(rp.LastDiverted, "push constants") {
		t.Errorf("drawn seed: %d replayed, %d diverted (%q); want 0 and 2, for the push constants", rp.Replayed, rp.Diverted, rp.LastDiverted)
	}

	// With the seed on the device: recorded, captured, replayed, each the
	// gradient of the same step recorded on its own.
	for i := range 3 {
		if err := nn.NewSeedSource(uint64(i)).NextTo(seedT); err != nil {
			t.Fatal(err)
		}
		if err := rp.Step("device", step(nn.Options{DeviceSeed: seedT})); err != nil {
			t.Fatalf("device seed, step %d: %v", i, err)
		}
		got := tRead(t, w.Grad)
		if err := step(nn.Options{Seeds: nn.NewSeedSource(uint64(i))})(); err != nil {
			t.Fatal(err)
		}
		tSameBits(t, fmt.Sprintf("device seed, step %d", i), got, tRead(t, w.Grad))
	}
	if rp.Captured != 2 || rp.Replayed != 1 {
		t.Errorf("device seed: %d captured, %d replayed in all, want 2 and 1", rp.Captured, rp.Replayed)
	}
}
