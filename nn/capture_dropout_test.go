package nn_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestCaptureDropoutSeed: a step whose graph draws its dropout seed on the
// host cannot be captured (every replay would repeat its masks): the
// Replayer's Step fails with vk.ErrCapturing, naming DeviceSeed, and the
// step leaves the gradient as it was. The same step reading its seed from
// Options.DeviceSeed is captured and replayed, with the gradients of the
// recorded steps.
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
	// One step function for both calls: the Replayer keeps a key's graphs
	// per function, and a closure made at two call sites may be two.
	drawn := step(nn.Options{Seeds: nn.NewSeedSource(7)})
	if err := rp.Step("drawn", drawn); err != nil { // recorded
		t.Fatal(err)
	}
	before := tRead(t, w.Grad)
	err := rp.Step("drawn", drawn) // captured
	if !errors.Is(err, vk.ErrCapturing) || !strings.Contains(err.Error(), "DeviceSeed") {
		t.Errorf("capturing a step that draws its seed: %v, want vk.ErrCapturing naming DeviceSeed", err)
	}
	if rp.Captured != 0 || rp.Graphs() != 0 {
		t.Errorf("%d captured, %d graphs kept, want none", rp.Captured, rp.Graphs())
	}
	tSameBits(t, "gradient after the refused capture", tRead(t, w.Grad), before)

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
	if rp.Captured != 1 || rp.Replayed != 1 {
		t.Errorf("device seed: %d captured, %d replayed, want 1 and 1", rp.Captured, rp.Replayed)
	}
}
