package nn_test

import (
	"encoding/json"
	"math"
	"strconv"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
)

func TestSchedules(t *testing.T) {
	near := func(what string, step int, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-15*math.Max(1, math.Abs(want)) {
			t.Errorf("%s(%d) = %.17g, want %.17g", what, step, got, want)
		}
	}
	// nanoGPT's get_lr with learning_rate 6e-4, min_lr 6e-5, warmup_iters
	// 10, lr_decay_iters 110, by hand.
	cos := nn.CosineWithWarmup(6e-4, 6e-5, 10, 110)
	for _, c := range []struct {
		step int
		want float64
	}{
		{-3, 6e-4 * 1 / 11}, // as step 0
		{0, 6e-4 * 1 / 11},  // (it+1)/(warmup+1)
		{9, 6e-4 * 10 / 11}, // the last warm-up step
		{10, 6e-4},          // decay ratio 0: cos 0 = 1
		{35, 6e-5 + 0.5*(1+math.Sqrt2/2)*(6e-4-6e-5)}, // ratio 1/4
		{60, 6e-5 + 0.5*(6e-4-6e-5)},                  // ratio 1/2: cos = 0
		{85, 6e-5 + 0.5*(1-math.Sqrt2/2)*(6e-4-6e-5)}, // ratio 3/4
		{110, 6e-5}, // ratio 1
		{111, 6e-5},
		{1 << 40, 6e-5},
	} {
		near("CosineWithWarmup", c.step, cos(c.step), c.want)
	}
	flat := nn.CosineWithWarmup(1, 0.5, 3, 3) // no decay phase
	for step, want := range []float64{0.25, 0.5, 0.75, 0.5, 0.5} {
		near("CosineWithWarmup(no decay)", step, flat(step), want)
	}
	noWarm := nn.CosineWithWarmup(1, 0, 0, 4)
	for step, want := range []float64{1, 0.5 * (1 + math.Sqrt2/2), 0.5, 0.5 * (1 - math.Sqrt2/2), 0, 0} {
		near("CosineWithWarmup(no warm-up)", step, noWarm(step), want)
	}

	st := nn.StepLR(0.1, 30, 0.1)
	for _, c := range []struct {
		step int
		want float64
	}{{0, 0.1}, {29, 0.1}, {30, 0.1 * 0.1}, {59, 0.1 * 0.1}, {60, 0.1 * 0.1 * 0.1}} {
		near("StepLR", c.step, st(c.step), c.want)
	}

	warm := nn.LinearWarmup(2, 3)
	for step, want := range []float64{0.5, 1, 1.5, 2, 2} {
		near("LinearWarmup", step, warm(step), want)
	}
	near("LinearWarmup(0)", 0, nn.LinearWarmup(2, 0)(0), 2)

	for what, f := range map[string]func(){
		"cosine decay before warm-up": func() { nn.CosineWithWarmup(1, 0, 5, 4) },
		"cosine negative warm-up":     func() { nn.CosineWithWarmup(1, 0, -1, 4) },
		"cosine NaN":                  func() { nn.CosineWithWarmup(math.NaN(), 0, 1, 4) },
		"cosine negative min":         func() { nn.CosineWithWarmup(1, -1, 1, 4) },
		"step size 0":                 func() { nn.StepLR(1, 0, 0.5) },
		"step inf gamma":              func() { nn.StepLR(1, 1, math.Inf(1)) },
		"warm-up negative":            func() { nn.LinearWarmup(1, -1) },
	} {
		tPanics(t, what, f)
	}
}

// The schedule's state is the iteration: saved in a checkpoint's extra
// section, it resumes the schedule where it was.
func TestScheduleCheckpoint(t *testing.T) {
	d := devtest.Open(t)
	p := tParam(t, d, "w", []float32{1, 2}, 2)
	lr := nn.CosineWithWarmup(1e-2, 1e-3, 2, 10)
	opt, err := nn.NewAdam([]*nn.Param{p}, nn.AdamOptions{LR: lr(0)})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	dir := t.TempDir()
	it := 7
	if err := nn.SaveCheckpoint(dir, []*nn.Param{p}, map[string]json.RawMessage{"iter": json.RawMessage(strconv.Itoa(it))}, opt); err != nil {
		t.Fatal(err)
	}
	extra, err := nn.LoadCheckpoint(dir, []*nn.Param{p}, opt)
	if err != nil {
		t.Fatal(err)
	}
	var resumed int
	if err := json.Unmarshal(extra["iter"], &resumed); err != nil {
		t.Fatal(err)
	}
	if resumed != it || lr(resumed) != lr(it) {
		t.Errorf("resumed at %d (lr %g), saved at %d (lr %g)", resumed, lr(resumed), it, lr(it))
	}
}
