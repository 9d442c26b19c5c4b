package nn_test

import (
	"math"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestAMPRecipes runs each recipe of example_amp_test.go with fp16 autocast
// and a GradScaler, and the same code in fp32 (useAMP false: no autocast, a
// disabled scaler), and compares. The AMP run must skip no step, lower the
// loss, and end within recipeTol of the fp32 run, in the loss and in every
// parameter (relative to the largest parameter magnitude); and it must not
// equal the fp32 run bit for bit, which would mean autocast did nothing.
//
// recipeTol: the fp16 runs round activations and gradients to 2^-11
// relative at each op, and ten steps carry those differences into the
// parameters: measured on lavapipe, at most 2.3e-4 of the largest
// parameter and 5e-5 of the loss (the test logs them). 2e-3 leaves ten
// times that, and catches a recipe that trains differently: one step of
// the ten skipped or doubled moves the parameters by about 1e-2, a clip of
// the scaled gradients (no Unscale before it) by far more.
const recipeTol = 2e-3

func TestAMPRecipes(t *testing.T) {
	d := devtest.Open(t)
	recipes := []struct {
		name  string
		run   func(d *vk.Device, useAMP bool) (*recipeResult, error)
		steps int // the optimizer steps the recipe counts (0: none counted)
	}{
		{"typical", recipeTypical, 0},
		{"gradient clipping", recipeClipping, 0},
		{"gradient accumulation", recipeAccumulation, 10}, // 5 epochs of 4 batches, a step every 2
		{"multiple models", recipeMultiple, 0},
		{"custom functions", recipeCustom, 0},
	}
	for _, rc := range recipes {
		t.Run(rc.name, func(t *testing.T) {
			mixed, err := rc.run(d, true)
			if err != nil {
				t.Fatal(err)
			}
			full, err := rc.run(d, false)
			if err != nil {
				t.Fatal(err)
			}
			checkRecipe(t, mixed, full)
			if mixed.steps != rc.steps {
				t.Errorf("%d optimizer steps, want %d", mixed.steps, rc.steps)
			}
		})
	}
}

func checkRecipe(t *testing.T, mixed, full *recipeResult) {
	t.Helper()
	t.Logf("loss before %.6f, after: amp %.6f fp32 %.6f", mixed.before, mixed.after, full.after)
	if mixed.before != full.before {
		t.Errorf("the runs start from different losses: %g and %g", mixed.before, full.before)
	}
	if mixed.skipped != 0 || full.skipped != 0 {
		t.Errorf("skipped steps: amp %d, fp32 %d, want 0", mixed.skipped, full.skipped)
	}
	if !(mixed.after < mixed.before) || !(full.after < full.before) {
		t.Errorf("the loss did not fall: amp %g -> %g, fp32 %g -> %g", mixed.before, mixed.after, full.before, full.after)
	}
	if diff := math.Abs(mixed.after - full.after); !(diff <= recipeTol*full.after) {
		t.Errorf("loss after: amp %g, fp32 %g (relative difference %.2g > %g)", mixed.after, full.after, diff/full.after, recipeTol)
	}
	if mixed.steps != full.steps {
		t.Errorf("optimizer steps: amp %d, fp32 %d", mixed.steps, full.steps)
	}
	if full.lastNorm != 0 || mixed.lastNorm != 0 {
		for _, n := range []float64{mixed.lastNorm, full.lastNorm} {
			if !(n > 0 && n <= 0.5*(1+1e-5)) {
				t.Errorf("the last gradient norm after the clip is %g, want in (0, 0.5]", n)
			}
		}
	}
	same := true
	var worst float64
	for i, p := range full.params {
		q := mixed.params[i]
		scale := 0.0
		for _, v := range p {
			scale = max(scale, math.Abs(float64(v)))
		}
		for j := range p {
			rel := math.Abs(float64(q[j]-p[j])) / scale
			worst = max(worst, rel)
			if !(rel <= recipeTol) {
				t.Errorf("parameter %d[%d]: amp %g, fp32 %g", i, j, q[j], p[j])
			}
		}
		same = same && slices.Equal(tBits(p), tBits(q))
	}
	t.Logf("largest parameter difference: %.2g of the largest magnitude", worst)
	if same {
		t.Errorf("the AMP run equals the fp32 run bit for bit: autocast did nothing")
	}
	for _, dt := range full.dtypes {
		if dt != tensor.Float32 {
			t.Errorf("a custom function's output is %s without autocast, want float32", dt)
		}
	}
}
