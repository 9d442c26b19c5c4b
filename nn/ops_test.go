package nn_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestOps runs the tests of single ops on one device.
func TestOps(t *testing.T) {
	d := devtest.Open(t)
	t.Run("DropoutMask", func(t *testing.T) { opsDropoutMask(t, d) })
	t.Run("DropoutSeedAdvances", func(t *testing.T) { opsDropoutSeedAdvances(t, d) })
	t.Run("DropoutDeviceSeed", func(t *testing.T) { opsDropoutDeviceSeed(t, d) })
	t.Run("MisusePanics", func(t *testing.T) { opsMisusePanics(t, d) })
	t.Run("CrossEntropyFloatLabels", func(t *testing.T) { opsCrossEntropyFloatLabels(t, d) })
}

// Dropout's mask: the right fraction, the same for a seed in every dtype,
// different across seeds and across the ops of a graph.
func opsDropoutMask(t *testing.T, d *vk.Device) {
	ones := make([]float32, 4096)
	for i := range ones {
		ones[i] = 1
	}
	x := tInput(t, d, ones, 64, 64)
	drop := func(seed uint32, dt tensor.DType, n int) [][]float32 {
		g := nn.NewGraph(d, nn.Options{Seeds: nn.NewSeedSource(uint64(seed))})
		defer g.Release()
		v := g.Cast(g.Input(x), dt)
		var out [][]float32
		for i := 0; i < n; i++ {
			out = append(out, tRead(t, g.Dropout(v, 0.25).Value()))
		}
		return out
	}
	zeros := func(v []float32) []bool {
		z := make([]bool, len(v))
		for i, x := range v {
			z[i] = x == 0
		}
		return z
	}
	a := drop(5, f32, 2)
	dropped := 0
	for _, v := range a[0] {
		switch v {
		case 0:
			dropped++
		case float32(1 / 0.75):
		default:
			t.Fatalf("dropout of 1 gave %g, want 0 or %g", v, float32(1/0.75))
		}
	}
	if frac := float64(dropped) / 4096; math.Abs(frac-0.25) > 0.03 {
		t.Errorf("dropped %.3f of the elements, want 0.25", frac)
	}
	tSameBits(t, "same seed", drop(5, f32, 1)[0], a[0])
	if slices.Equal(zeros(a[0]), zeros(a[1])) {
		t.Error("two dropouts of one graph have the same mask")
	}
	if slices.Equal(zeros(a[0]), zeros(drop(6, f32, 1)[0])) {
		t.Error("two seeds give the same mask")
	}
	if !slices.Equal(zeros(a[0]), zeros(drop(5, f16, 1)[0])) {
		t.Error("fp16 and fp32 masks of one seed differ")
	}

	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	v := g.Input(x)
	if g.Dropout(v, 0) != v {
		t.Error("Dropout(x, 0) is not x")
	}
	if (&nn.Dropout{P: 0.5}).Forward(g, v) != v {
		t.Error("Dropout module not training is not the identity")
	}
	for _, p := range []float32{-0.1, 1, float32(math.NaN())} {
		msg := tPanics(t, "Dropout p", func() { g.Dropout(v, p) })
		tContains(t, "Dropout p", msg, "Dropout")
	}
	msg := tPanics(t, "GELU approximate erf", func() { nn.GELU{Approximate: "erf"}.Forward(g, v) })
	tContains(t, "GELU approximate erf", msg, "GELU", "erf", "tanh")
}

// Dropout draws a new mask each step by default: a loop that makes one
// Graph per step with zero Options gets a different mask every step, and a
// run from the same seed gets the same masks again.
func opsDropoutSeedAdvances(t *testing.T, d *vk.Device) {
	ones := make([]float32, 1024)
	for i := range ones {
		ones[i] = 1
	}
	x := tInput(t, d, ones, 32, 32)
	steps := func(o nn.Options, n int) [][]float32 {
		var out [][]float32
		for i := 0; i < n; i++ {
			g := nn.NewGraph(d, o)
			out = append(out, tRead(t, g.Dropout(g.Input(x), 0.5).Value()))
			g.Release()
		}
		return out
	}
	a := steps(nn.Options{}, 2)
	if slices.Equal(a[0], a[1]) {
		t.Error("zero Options: two steps have the same dropout mask")
	}
	nn.ManualSeed(7)
	a = steps(nn.Options{}, 3)
	nn.ManualSeed(7)
	b := steps(nn.Options{}, 3)
	for i := range a {
		tSameBits(t, fmt.Sprintf("ManualSeed(7), step %d", i), b[i], a[i])
	}
	if slices.Equal(a[1], a[2]) {
		t.Error("after ManualSeed: two steps have the same dropout mask")
	}
	// A run's own source, resumed at a step, continues the same masks.
	src := nn.NewSeedSource(7)
	c := steps(nn.Options{Seeds: src}, 3)
	if slices.Equal(c[0], c[1]) {
		t.Error("SeedSource: two steps have the same dropout mask")
	}
	if src.Step() != 3 {
		t.Errorf("SeedSource at step %d after three graphs with dropout, want 3", src.Step())
	}
	resumed := nn.NewSeedSource(7)
	resumed.SetStep(1)
	e := steps(nn.Options{Seeds: resumed}, 2)
	for i := range e {
		tSameBits(t, fmt.Sprintf("resumed at step 1, step %d", i+1), e[i], c[i+1])
	}
	if other := steps(nn.Options{Seeds: nn.NewSeedSource(8)}, 1); slices.Equal(other[0], c[0]) {
		t.Error("seeds 7 and 8 give the same first mask")
	}
	// A graph without dropout draws nothing.
	g := nn.NewGraph(d, nn.Options{Seeds: src})
	g.ReLU(g.Input(x))
	g.Release()
	if src.Step() != 3 {
		t.Errorf("a graph without dropout advanced the source to step %d", src.Step())
	}
}

// A seed on the device (Options.DeviceSeed) gives the masks and gradients
// of the seed a SeedSource would draw, forward and backward; the graph
// reads its own copy, so a write after its first Dropout (the next step's
// seed) leaves its backward alone; a NoGrad graph takes it too; a bad seed
// panics.
func opsDropoutDeviceSeed(t *testing.T, d *vk.Device) {
	const n = 2048
	w := tParam(t, d, "w", tRand(n, 4, 1, f32), 32, 64)
	seedT := tensor.New(d, tensor.Int32, 1)
	defer seedT.Release()
	write := func(s uint32) {
		t.Helper()
		if err := seedT.SetBytes([]byte{byte(s), byte(s >> 8), byte(s >> 16), byte(s >> 24)}); err != nil {
			t.Fatal(err)
		}
	}
	// run: two dropouts, one in fp16 under autocast's cast, a loss and its
	// gradient; rewrite is written into the device seed after the forward.
	run := func(o nn.Options, rewrite func()) (out, grad []float32) {
		t.Helper()
		g := nn.NewGraph(d, o)
		defer g.Release()
		a := g.Dropout(g.Param(w), 0.3)
		b := g.Dropout(g.Cast(g.Mul(a, a), f16), 0.6)
		loss := g.Sum(g.Cast(b, f32))
		if rewrite != nil {
			rewrite()
		}
		w.ZeroGrad()
		if err := loss.Backward(); err != nil {
			t.Fatal(err)
		}
		return tRead(t, b.Value()), tRead(t, w.Grad)
	}
	for _, runSeed := range []uint64{3, 4} {
		src := nn.NewSeedSource(runSeed)
		wantOut, wantGrad := run(nn.Options{Seeds: src}, nil)
		if err := nn.NewSeedSource(runSeed).NextTo(seedT); err != nil {
			t.Fatal(err)
		}
		gotOut, gotGrad := run(nn.Options{DeviceSeed: seedT}, func() { write(12345) })
		tSameBits(t, fmt.Sprintf("run seed %d: output", runSeed), gotOut, wantOut)
		tSameBits(t, fmt.Sprintf("run seed %d: gradient, the seed rewritten after the forward", runSeed), gotGrad, wantGrad)

		g := nn.NewGraph(d, nn.Options{NoGrad: true, DeviceSeed: seedT})
		if err := nn.NewSeedSource(runSeed).NextTo(seedT); err != nil {
			t.Fatal(err)
		}
		a := g.Dropout(g.Param(w), 0.3)
		b := g.Dropout(g.Cast(g.Mul(a, a), f16), 0.6)
		tSameBits(t, fmt.Sprintf("run seed %d: NoGrad output", runSeed), tRead(t, b.Value()), wantOut)
		g.Release()
	}
	for _, bad := range []*tensor.Tensor{tensor.New(d, tensor.Int32, 2), tensor.New(d, tensor.Float32, 1)} {
		g := nn.NewGraph(d, nn.Options{DeviceSeed: bad})
		msg := tPanics(t, "DeviceSeed "+bad.String(), func() { g.Dropout(g.Param(w), 0.5) })
		tContains(t, "DeviceSeed "+bad.String(), msg, "Dropout", "DeviceSeed")
		g.Release()
		bad.Release()
	}
}

// Misuse panics with the op's name and the shapes.
func opsMisusePanics(t *testing.T, d *vk.Device) {
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	a := g.Input(tInput(t, d, make([]float32, 6), 2, 3))
	b := g.Input(tInput(t, d, make([]float32, 6), 3, 2))
	labels := tLabels(t, d, 0, 1, 2)
	labels2 := tLabels(t, d, 0, 1)
	gamma := g.Input(tInput(t, d, make([]float32, 2), 2))
	for _, c := range []struct {
		name string
		f    func()
		want []string
	}{
		{"add", func() { g.Add(a, b) }, []string{"Add", "[2 3]", "[3 2]"}},
		{"mse", func() { g.MSELoss(a, b, nn.Mean) }, []string{"MSELoss", "[2 3]", "[3 2]"}},
		{"cross entropy labels", func() { g.CrossEntropyLoss(a, labels, nn.Mean) }, []string{"CrossEntropyLoss", "[2 3]", "[3]"}},
		{"layer norm", func() { g.LayerNorm(a, gamma, gamma, 1e-5) }, []string{"LayerNorm", "[2 3]", "[2]"}},
		{"matmul", func() { g.MatMul(a, a, false, false) }, []string{"MatMul"}},
		{"mse reduction", func() { g.MSELoss(a, a, nn.Reduction(2)) }, []string{"MSELoss", "reduction 2"}},
		{"cross entropy reduction", func() { g.CrossEntropyLoss(a, labels2, nn.Reduction(-1)) }, []string{"CrossEntropyLoss", "reduction -1"}},
	} {
		msg := tPanics(t, c.name, c.f)
		tContains(t, c.name, msg, c.want...)
	}
}

// Labels are Int32 class indices: float labels, even integral ones, panic
// with a *tensor.DTypeError naming the op. (Labels out of range:
// target_test.go.)
func opsCrossEntropyFloatLabels(t *testing.T, d *vk.Device) {
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	logits := g.Input(tInput(t, d, tRand(6, 1, 1, f32), 2, 3))
	for _, l := range []*tensor.Tensor{tInput(t, d, []float32{0, 2}, 2), tHalf(t, d, []float32{0, 2}, 2)} {
		func() {
			defer func() {
				r := recover()
				e, ok := r.(*tensor.DTypeError)
				if !ok {
					t.Errorf("%s labels: panicked with %T %v, want a *tensor.DTypeError", l.DType(), r, r)
					return
				}
				tContains(t, "float labels", e.Error(), "CrossEntropyLoss", l.DType().String(), "int32 class indices")
			}()
			g.CrossEntropyLoss(logits, l, nn.Sum)
		}()
	}
}
