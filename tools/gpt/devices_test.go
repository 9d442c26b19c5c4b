package main

import (
	"math"
	"strconv"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
)

// TestDevices: -devices with two ranks on the test device, each with half
// of every batch, trains the tiny GPT as one device does: every
// evaluation's losses within 0.01 in fp32 (0.0016 measured on lavapipe:
// the sums of the halves round differently, and Adam's step of a gradient
// near 0 can change sign) and 0.05 in fp16 AMP (0.022 measured), where each
// rank's loss is the mean over its half, as in PyTorch's DDP, so its fp16
// gradients are twice one device's and overflow sooner: two ranks may skip
// one iteration more (they did once in 30 at a scale of 2^16).
func TestDevices(t *testing.T) {
	d := devtest.Open(t)
	idx := strconv.Itoa(d.Info().Index) // names may hold commas
	for _, precision := range []string{"f32", "f16"} {
		c := tiny()
		c.precision, c.device = precision, idx
		one, _ := runJSON(t, c)
		c.device, c.devices = "", idx+","+idx
		two, log := runJSON(t, c)
		if len(one) != len(two) {
			t.Fatalf("%s: %d evaluations on one device, %d on two\n%s", precision, len(one), len(two), log)
		}
		worst := 0.0
		for i := range one {
			for _, k := range []string{"train_loss", "val_loss"} {
				worst = max(worst, math.Abs(one[i][k]-two[i][k]))
			}
			if d := two[i]["skipped"] - one[i]["skipped"]; d < 0 || d > 1 {
				t.Errorf("%s: evaluation %d: %g skipped on two devices, %g on one", precision, i, two[i]["skipped"], one[i]["skipped"])
			}
		}
		t.Logf("%s: largest loss difference %g (final val loss %g on one device, %g on two)", precision, worst, one[len(one)-1]["val_loss"], two[len(two)-1]["val_loss"])
		if tol := map[string]float64{"f32": 0.01, "f16": 0.05}[precision]; worst > tol {
			t.Errorf("%s: losses differ by %g", precision, worst)
		}
	}
}
