package nn_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Optimizer tests: three steps on parameters of odd sizes, one of them
// longer than a chunk of the update kernel (8192 elements), against float64
// host implementations of PyTorch's formulas.

var optShapes = [][]int{{1}, {5, 3}, {7}, {3, 4099}}

// TestOptimizers runs the optimizer tests on one device: building the
// kernels once keeps them fast on SwiftShader.
func TestOptimizers(t *testing.T) {
	d := devtest.Open(t)
	t.Run("SGD", func(t *testing.T) { optimSGD(t, d) })
	t.Run("Adam", func(t *testing.T) { optimAdam(t, d) })
	t.Run("StepUnless", func(t *testing.T) { optimStepUnless(t, d) })
	t.Run("InvalidHyperparameters", func(t *testing.T) { optimInvalidHyperparameters(t, d) })
	t.Run("SetLR", func(t *testing.T) { optimSetLR(t, d) })
	t.Run("ZeroLR", func(t *testing.T) { optimZeroLR(t, d) })
	t.Run("Close", func(t *testing.T) { optimClose(t, d) })
	t.Run("ScalerSkipsOverflow", func(t *testing.T) { optimScalerSkipsOverflow(t, d) })
}

// optimizer is what the tests use of SGD and Adam.
type optimizer interface {
	nn.Stateful
	Step() error
	StepUnless(found *tensor.Tensor) error
	ZeroGrad() error
	Steps() (int, error)
	LR() float64
	SetLR(float64) error
	Close() error
}

// optParams returns parameters of optShapes with values in [-1, 1).
func optParams(t *testing.T, d *vk.Device) ([]*nn.Param, [][]float64) {
	ps := make([]*nn.Param, len(optShapes))
	w := make([][]float64, len(optShapes))
	for i, s := range optShapes {
		v := tRand(tLen(s), uint64(10+i), 1, f32)
		ps[i] = tParam(t, d, fmt.Sprintf("p%d", i), v, s...)
		w[i] = to64(v)
	}
	return ps, w
}

// optGrads returns the gradients of step s: values in [-1, 1), with zeros.
func optGrads(s int) [][]float32 {
	gs := make([][]float32, len(optShapes))
	for i, sh := range optShapes {
		gs[i] = tRand(tLen(sh), uint64(1000*s+i), 1, f32)
		gs[i][0] = 0
	}
	return gs
}

// setGrads makes every parameter's gradient exactly gs, through a graph:
// the gradient of sum(p * c) is c.
func setGrads(t *testing.T, d *vk.Device, opt optimizer, ps []*nn.Param, gs [][]float32) {
	t.Helper()
	if err := opt.ZeroGrad(); err != nil {
		t.Fatal(err)
	}
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	var loss *nn.Var
	for i, p := range ps {
		c := g.Input(tInput(t, d, gs[i], optShapes[i]...))
		l := g.Sum(g.Mul(g.Param(p), c))
		if loss == nil {
			loss = l
		} else {
			loss = g.Add(loss, l)
		}
	}
	if err := g.Backward(loss, nil); err != nil {
		t.Fatal(err)
	}
}

// r32 is a hyperparameter as the kernels see it: rounded to fp32.
func r32(v float64) float64 { return float64(float32(v)) }

// hostSGD is torch.optim.SGD's update of one parameter; buf is nil before
// the first step.
func hostSGD(o nn.SGDOptions, w, g, buf []float64) []float64 {
	lr, mom, damp, wd := r32(o.LR), r32(o.Momentum), r32(o.Dampening), r32(o.WeightDecay)
	first := buf == nil
	if first && mom != 0 {
		buf = make([]float64, len(w))
	}
	for i := range w {
		dp := g[i] + wd*w[i]
		if mom != 0 {
			if first {
				buf[i] = dp
			} else {
				buf[i] = mom*buf[i] + (1-damp)*dp
			}
			if o.Nesterov {
				dp += mom * buf[i]
			} else {
				dp = buf[i]
			}
		}
		w[i] -= lr * dp
	}
	return buf
}

// hostAdam is torch.optim.Adam's (AdamW's when Decoupled) update of one
// parameter at step t (from 1).
func hostAdam(o nn.AdamOptions, t int, w, g, m, v []float64) {
	lr, b1, b2, eps, wd := r32(o.LR), r32(o.Beta1), r32(o.Beta2), r32(o.Eps), r32(o.WeightDecay)
	bc1 := 1 - math.Pow(b1, float64(t))
	bc2 := math.Sqrt(1 - math.Pow(b2, float64(t)))
	for i := range w {
		gi := g[i]
		if o.Decoupled {
			w[i] *= 1 - lr*wd
		} else {
			gi += wd * w[i]
		}
		m[i] = b1*m[i] + (1-b1)*gi
		v[i] = b2*v[i] + (1-b2)*gi*gi
		w[i] -= lr / bc1 * m[i] / (math.Sqrt(v[i])/bc2 + eps)
	}
}

// checkOpt compares the parameters and moments with the host's.
func checkOpt(t *testing.T, what string, opt optimizer, ps []*nn.Param, w, m1, m2 [][]float64) {
	t.Helper()
	tol := ref.Tol(f32, 16)
	gm1, gm2 := nn.Moments(opt)
	for i, p := range ps {
		ref.Check(t, fmt.Sprintf("%s: %s", what, p.Name), tRead(t, p.Value), w[i], tMaxScale(w[i]), tol)
		if m1 != nil {
			ref.Check(t, fmt.Sprintf("%s: %s first moment", what, p.Name), tRead(t, gm1[i]), m1[i], tMaxScale(m1[i]), tol)
		}
		if m2 != nil {
			ref.Check(t, fmt.Sprintf("%s: %s second moment", what, p.Name), tRead(t, gm2[i]), m2[i], tMaxScale(m2[i]), tol)
		}
	}
}

func optimSGD(t *testing.T, d *vk.Device) {
	cases := []nn.SGDOptions{
		{LR: 0.1},
		{LR: 0.1, Momentum: 0.9},
		{LR: 0.1, Momentum: 0.9, Dampening: 0.3},
		{LR: 0.1, Momentum: 0.9, Nesterov: true},
		{LR: 0.1, WeightDecay: 0.05},
		{LR: 0.05, Momentum: 0.8, Dampening: 0.1, WeightDecay: 0.01},
		{LR: 0.05, Momentum: 0.8, WeightDecay: 0.01, Nesterov: true},
	}
	for i, o := range cases {
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) { checkSGD(t, d, o) })
	}
}

// checkSGD takes three steps with o and compares with the host.
func checkSGD(t *testing.T, d *vk.Device, o nn.SGDOptions) {
	ps, w := optParams(t, d)
	opt, err := nn.NewSGD(ps, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opt.Close() })
	bufs := make([][]float64, len(ps))
	for s := 1; s <= 3; s++ {
		gs := optGrads(s)
		setGrads(t, d, opt, ps, gs)
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		for j := range ps {
			bufs[j] = hostSGD(o, w[j], to64(gs[j]), bufs[j])
		}
	}
	if o.Momentum == 0 {
		bufs = nil
	}
	checkOpt(t, fmt.Sprintf("%+v", o), opt, ps, w, bufs, nil)
	if n, err := opt.Steps(); n != 3 || err != nil {
		t.Errorf("%+v: Steps() = %d, %v; want 3", o, n, err)
	}
}

func optimAdam(t *testing.T, d *vk.Device) {
	cases := []nn.AdamOptions{
		{LR: 0.05},
		{LR: 0.05, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6},
		{LR: 0.05, WeightDecay: 0.1},
		{LR: 0.05, WeightDecay: 0.1, Decoupled: true},
	}
	for i, o := range cases {
		t.Run(fmt.Sprintf("%d", i), func(t *testing.T) { checkAdam(t, d, o) })
	}
}

// checkAdam takes three steps with o and compares with the host.
func checkAdam(t *testing.T, d *vk.Device, o nn.AdamOptions) {
	ps, w := optParams(t, d)
	opt, err := nn.NewAdam(ps, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opt.Close() })
	if o.Beta1 == 0 {
		o.Beta1, o.Beta2, o.Eps = 0.9, 0.999, 1e-8 // PyTorch's defaults
	}
	m, v := make([][]float64, len(ps)), make([][]float64, len(ps))
	for j := range ps {
		m[j], v[j] = make([]float64, len(w[j])), make([]float64, len(w[j]))
	}
	for s := 1; s <= 3; s++ {
		gs := optGrads(s)
		setGrads(t, d, opt, ps, gs)
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		for j := range ps {
			hostAdam(o, s, w[j], to64(gs[j]), m[j], v[j])
		}
	}
	checkOpt(t, fmt.Sprintf("%+v", o), opt, ps, w, m, v)
	if n, err := opt.Steps(); n != 3 || err != nil {
		t.Errorf("%+v: Steps() = %d, %v; want 3", o, n, err)
	}
}

// With small memory blocks the parameters spread over several blocks, the
// largest in one of its own: one update dispatch per group of blocks.
func TestOptimizerAcrossBlocks(t *testing.T) {
	d := devtest.Open(t, vk.Options{BlockSize: 64 << 10})
	checkSGD(t, d, nn.SGDOptions{LR: 0.1, Momentum: 0.9, WeightDecay: 0.01})
	checkAdam(t, d, nn.AdamOptions{LR: 0.05, WeightDecay: 0.1})
	if s := d.Stats(); s.MemoryBlocks < 3 {
		t.Errorf("%d memory blocks: the test does not spread the parameters", s.MemoryBlocks)
	}
}

// optSnapshot is every value an optimizer step may change.
type optSnapshot struct {
	values [][]float32
	steps  int
}

func snapshot(t *testing.T, opt optimizer, ps []*nn.Param) optSnapshot {
	t.Helper()
	var s optSnapshot
	for _, p := range ps {
		s.values = append(s.values, tRead(t, p.Value))
	}
	m1, m2 := nn.Moments(opt)
	for _, ms := range [][]*tensor.Tensor{m1, m2} {
		for _, m := range ms {
			if m != nil {
				s.values = append(s.values, tRead(t, m))
			}
		}
	}
	var err error
	if s.steps, err = opt.Steps(); err != nil {
		t.Fatal(err)
	}
	return s
}

// StepUnless with a set flag leaves weights, moments and the step count
// bit-identical; with a clear flag it steps.
func optimStepUnless(t *testing.T, d *vk.Device) {
	makers := map[string]func(ps []*nn.Param) (optimizer, error){
		"sgd": func(ps []*nn.Param) (optimizer, error) {
			return nn.NewSGD(ps, nn.SGDOptions{LR: 0.1, Momentum: 0.9, WeightDecay: 0.01})
		},
		"adam": func(ps []*nn.Param) (optimizer, error) {
			return nn.NewAdam(ps, nn.AdamOptions{LR: 0.01, WeightDecay: 0.01, Decoupled: true})
		},
	}
	for name, mk := range makers {
		t.Run(name, func(t *testing.T) {
			ps, _ := optParams(t, d)
			opt, err := mk(ps)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { opt.Close() })
			setGrads(t, d, opt, ps, optGrads(1))
			if err := opt.Step(); err != nil { // moments become non-zero
				t.Fatal(err)
			}
			setGrads(t, d, opt, ps, optGrads(2))
			before := snapshot(t, opt, ps)
			if err := opt.StepUnless(tInput(t, d, []float32{1}, 1)); err != nil {
				t.Fatal(err)
			}
			after := snapshot(t, opt, ps)
			if after.steps != before.steps {
				t.Errorf("skipped step: Steps() went from %d to %d", before.steps, after.steps)
			}
			for i := range before.values {
				tSameBits(t, fmt.Sprintf("skipped step: tensor %d", i), after.values[i], before.values[i])
			}
			if err := opt.StepUnless(tInput(t, d, []float32{0}, 1)); err != nil {
				t.Fatal(err)
			}
			stepped := snapshot(t, opt, ps)
			if stepped.steps != before.steps+1 {
				t.Errorf("step with a clear flag: Steps() went from %d to %d", before.steps, stepped.steps)
			}
			for i := range before.values {
				// (The one-element parameter has a zero gradient: its moments stay 0.)
				if len(before.values[i]) > 1 && slices.Equal(tBits(stepped.values[i]), tBits(before.values[i])) {
					t.Errorf("step with a clear flag: tensor %d unchanged", i)
				}
			}
			msg := tPanics(t, "StepUnless with a [2] flag", func() { opt.StepUnless(tInput(t, d, []float32{0, 0}, 2)) })
			tContains(t, "StepUnless with a [2] flag", msg, "found")
		})
	}
}

func optimInvalidHyperparameters(t *testing.T, d *vk.Device) {
	p := tParam(t, d, "p", []float32{1, 2}, 2)
	nan, inf := math.NaN(), math.Inf(1)
	for i, o := range []nn.SGDOptions{
		{LR: nan}, {LR: -0.1}, {LR: inf}, {LR: 0.1, Momentum: -0.5}, {LR: 0.1, Momentum: nan},
		{LR: 0.1, Dampening: -1}, {LR: 0.1, WeightDecay: -1}, {LR: 0.1, WeightDecay: nan},
		{LR: 0.1, Nesterov: true}, {LR: 0.1, Momentum: 0.9, Dampening: 0.5, Nesterov: true},
	} {
		if opt, err := nn.NewSGD([]*nn.Param{p}, o); err == nil {
			t.Errorf("SGD case %d %+v: no error", i, o)
			opt.Close()
		}
	}
	for i, o := range []nn.AdamOptions{
		{LR: nan}, {LR: -1}, {LR: 0.1, Beta1: 1}, {LR: 0.1, Beta1: 1.5}, {LR: 0.1, Beta1: -0.1},
		{LR: 0.1, Beta2: 1}, {LR: 0.1, Beta2: nan}, {LR: 0.1, Eps: -1e-8}, {LR: 0.1, Eps: nan},
		{LR: 0.1, WeightDecay: -0.1}, {LR: 0.1, WeightDecay: inf},
	} {
		if opt, err := nn.NewAdam([]*nn.Param{p}, o); err == nil {
			t.Errorf("Adam case %d %+v: no error", i, o)
			opt.Close()
		}
	}
	if _, err := nn.NewSGD(nil, nn.SGDOptions{LR: 0.1}); err == nil {
		t.Error("SGD without parameters: no error")
	}
	sgd, err := nn.NewSGD([]*nn.Param{p}, nn.SGDOptions{LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sgd.Close() })
	adam, err := nn.NewAdam([]*nn.Param{p}, nn.AdamOptions{LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adam.Close() })
	for _, opt := range []optimizer{sgd, adam} {
		for _, lr := range []float64{nan, -1, inf} {
			if err := opt.SetLR(lr); err == nil {
				t.Errorf("%T.SetLR(%g): no error", opt, lr)
			}
		}
		if opt.LR() != 0.1 {
			t.Errorf("%T: LR %g after failed SetLR calls, want 0.1", opt, opt.LR())
		}
	}
}

// An LR of 0 trains nothing, so it is an error naming the option unless
// ZeroLR says it is meant: in the options and in SetLR.
func optimZeroLR(t *testing.T, d *vk.Device) {
	p := tParam(t, d, "p", []float32{1, 2}, 2)
	sgd, err := nn.NewSGD([]*nn.Param{p}, nn.SGDOptions{Momentum: 0.9})
	if err == nil {
		sgd.Close()
		t.Error("NewSGD with LR 0: no error")
	} else {
		tContains(t, "NewSGD with LR 0", err.Error(), "LR", "ZeroLR")
	}
	adam, err := nn.NewAdam([]*nn.Param{p}, nn.AdamOptions{})
	if err == nil {
		adam.Close()
		t.Error("NewAdam(AdamOptions{}): no error")
	} else {
		tContains(t, "NewAdam(AdamOptions{})", err.Error(), "LR", "ZeroLR")
	}
	sgd, err = nn.NewSGD([]*nn.Param{p}, nn.SGDOptions{Momentum: 0.9, ZeroLR: true})
	if err != nil {
		t.Fatalf("NewSGD with ZeroLR: %v", err)
	}
	t.Cleanup(func() { sgd.Close() })
	adam, err = nn.NewAdam([]*nn.Param{p}, nn.AdamOptions{ZeroLR: true})
	if err != nil {
		t.Fatalf("NewAdam with ZeroLR: %v", err)
	}
	t.Cleanup(func() { adam.Close() })
	sgd1, err := nn.NewSGD([]*nn.Param{p}, nn.SGDOptions{LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sgd1.Close() })
	adam1, err := nn.NewAdam([]*nn.Param{p}, nn.AdamOptions{LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { adam1.Close() })
	for _, opt := range []optimizer{sgd1, adam1} {
		if err := opt.SetLR(0); err == nil {
			t.Errorf("%T.SetLR(0) without ZeroLR: no error", opt)
		} else {
			tContains(t, fmt.Sprintf("%T.SetLR(0)", opt), err.Error(), "LR", "ZeroLR")
		}
		if opt.LR() != 0.1 {
			t.Errorf("%T: LR %g after a refused SetLR(0), want 0.1", opt, opt.LR())
		}
	}
	for _, opt := range []optimizer{sgd, adam} {
		if err := opt.SetLR(0.5); err != nil {
			t.Fatal(err)
		}
		if err := opt.SetLR(0); err != nil {
			t.Errorf("%T.SetLR(0) with ZeroLR: %v", opt, err)
		}
		if opt.LR() != 0 {
			t.Errorf("%T: LR %g after SetLR(0), want 0", opt, opt.LR())
		}
	}
}

// Close is idempotent and safe on the zero value.
func optimClose(t *testing.T, d *vk.Device) {
	p := tParam(t, d, "p", []float32{1, 2}, 2)
	var zs nn.SGD
	var za nn.Adam
	for _, opt := range []interface{ Close() error }{&zs, &za} {
		if err := opt.Close(); err != nil {
			t.Errorf("%T zero Close: %v", opt, err)
		}
	}
	live := d.Stats().LiveBuffers
	sgd, err := nn.NewSGD([]*nn.Param{p}, nn.SGDOptions{LR: 0.1, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	adam, err := nn.NewAdam([]*nn.Param{p}, nn.AdamOptions{LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []optimizer{sgd, adam} {
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if err := opt.Close(); err != nil {
				t.Errorf("%T Close %d: %v", opt, i, err)
			}
		}
	}
	if n := d.Stats().LiveBuffers; n != live {
		t.Errorf("%d live buffers after closing the optimizers, want %d", n, live)
	}
}

// SetLR applies to the steps after it.
func optimSetLR(t *testing.T, d *vk.Device) {
	for _, name := range []string{"sgd", "adam"} {
		ps, w := optParams(t, d)
		var opt optimizer
		var err error
		if name == "sgd" {
			opt, err = nn.NewSGD(ps, nn.SGDOptions{LR: 0.1})
		} else {
			opt, err = nn.NewAdam(ps, nn.AdamOptions{LR: 0.1})
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { opt.Close() })
		m, v := make([][]float64, len(ps)), make([][]float64, len(ps))
		for j := range ps {
			m[j], v[j] = make([]float64, len(w[j])), make([]float64, len(w[j]))
		}
		for s, lr := range []float64{0.1, 0.02, 0.3} {
			if err := opt.SetLR(lr); err != nil {
				t.Fatal(err)
			}
			if opt.LR() != lr {
				t.Errorf("%s: LR() = %g after SetLR(%g)", name, opt.LR(), lr)
			}
			gs := optGrads(s + 1)
			setGrads(t, d, opt, ps, gs)
			if err := opt.Step(); err != nil {
				t.Fatal(err)
			}
			for j := range ps {
				if name == "sgd" {
					hostSGD(nn.SGDOptions{LR: lr}, w[j], to64(gs[j]), nil)
				} else {
					hostAdam(nn.AdamOptions{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}, s+1, w[j], to64(gs[j]), m[j], v[j])
				}
			}
		}
		checkOpt(t, name, opt, ps, w, nil, nil)
	}
}

// Both optimizers skip themselves on the device for the gradient scaler.
var (
	_ scaler.DeviceSkipper = (*nn.SGD)(nil)
	_ scaler.DeviceSkipper = (*nn.Adam)(nil)
)

// A step whose fp16 gradients overflow under a huge loss scale is skipped on
// the device: weights, moments and the step count stay, and the scale backs
// off.
func optimScalerSkipsOverflow(t *testing.T, d *vk.Device) {
	w := tParam(t, d, "w", tRand(12, 1, 1, f32), 3, 4)
	opt, err := nn.NewAdam([]*nn.Param{w}, nn.AdamOptions{LR: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opt.Close() })
	s, err := scaler.New(scaler.Options{InitScale: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	x := tInput(t, d, tRand(8, 2, 1, f32), 2, 4)
	before := snapshot(t, opt, []*nn.Param{w})
	g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16})
	defer g.Release()
	loss := g.Sum(g.Linear(g.Input(x), g.Param(w), nil))
	if err := g.Backward(loss, s.Seed(loss.Value())); err != nil {
		t.Fatal(err)
	}
	skipped, err := s.Step(opt)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(); err != nil {
		t.Fatal(err)
	}
	if v, err := skipped.Value(); !v || err != nil {
		t.Errorf("Skipped = %v, %v; want true", v, err)
	}
	sameState(t, "skipped step", snapshot(t, opt, []*nn.Param{w}), before)
	if v, err := s.ScaleValue(); v != 1<<39 || err != nil {
		t.Errorf("scale %g, %v after the overflow; want 2^39", v, err)
	}
}
