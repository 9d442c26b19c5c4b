package scaler_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// sgd is a real optimizer on the device: p -= lr * g. As a DeviceSkipper it
// skips itself on the device; hostSGD hides that, so the scaler must read
// the flag.
type sgd struct {
	params, grads []*tensor.Tensor
	lr            float32
	zero          *tensor.Tensor // a flag that is always 0, for plain steps
	steps         int
}

func (o *sgd) Gradients() []*tensor.Tensor { return o.grads }

func (o *sgd) Step() error {
	o.steps++
	return o.StepUnless(o.zero)
}

func (o *sgd) StepUnless(found *tensor.Tensor) error {
	for i, p := range o.params {
		if err := tensor.AxpyUnless(-o.lr, o.grads[i], p, found); err != nil {
			return err
		}
	}
	return nil
}

type hostSGD struct{ o *sgd }

func (h hostSGD) Gradients() []*tensor.Tensor { return h.o.grads }
func (h hostSGD) Step() error                 { return h.o.Step() }

func newSGD(t testing.TB, d *vk.Device, sizes ...int) *sgd {
	t.Helper()
	o := &sgd{lr: 0.5, zero: tensor.Zeros(d, tensor.Float32, 1)}
	t.Cleanup(o.zero.Release)
	for i, n := range sizes {
		p := tensor.FromFloat32(d, ref.Rand(n, uint64(i)), n)
		g := tensor.FromFloat32(d, ref.Rand(n, uint64(100+i)), n)
		t.Cleanup(p.Release)
		t.Cleanup(g.Release)
		o.params, o.grads = append(o.params, p), append(o.grads, g)
	}
	return o
}

func newScaler(t testing.TB, o scaler.Options) *scaler.Scaler {
	t.Helper()
	s, err := scaler.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func values(t testing.TB, x *tensor.Tensor) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// setGrad overwrites a gradient with v, planting bad at index at if at >= 0.
func setGrad(t testing.TB, g *tensor.Tensor, v []float32, at int, bad float32) {
	t.Helper()
	w := append([]float32(nil), v...)
	if at >= 0 {
		w[at] = bad
	}
	if err := writeFloats(g, w); err != nil {
		t.Fatal(err)
	}
}

func writeFloats(g *tensor.Tensor, v []float32) error {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		b := math.Float32bits(x)
		raw[4*i], raw[4*i+1], raw[4*i+2], raw[4*i+3] = byte(b), byte(b>>8), byte(b>>16), byte(b>>24)
	}
	return g.SetBytes(raw)
}

// pyUpdate is PyTorch's _amp_update_scale_ on the host, for comparison.
func pyUpdate(scale float32, tracker int, found bool, growth, backoff float64, interval int) (float32, int) {
	if found {
		return float32(float64(scale) * backoff), 0
	}
	if tracker+1 == interval {
		grown := float32(float64(scale) * growth)
		if !math.IsInf(float64(grown), 0) && !math.IsNaN(float64(grown)) {
			scale = grown
		}
		return scale, 0
	}
	return scale, tracker + 1
}

func loss(t testing.TB, d *vk.Device) *tensor.Tensor {
	t.Helper()
	l := tensor.FromFloat32(d, []float32{1.5}, 1)
	t.Cleanup(l.Release)
	return l
}

// iterate runs one scaled step with an inf planted (or not) in gradient 0.
func iterate(t testing.TB, d *vk.Device, s *scaler.Scaler, o *sgd, inf bool) bool {
	t.Helper()
	scaled := s.Scale(loss(t, d))
	defer scaled.Release()
	at := -1
	if inf {
		at = 0
	}
	setGrad(t, o.grads[0], ref.Rand(o.grads[0].Len(), 7), at, float32(math.Inf(1)))
	skipped, err := s.Step(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(); err != nil {
		t.Fatal(err)
	}
	v, err := skipped.Value()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestUpdateRule(t *testing.T) {
	d := devtest.Open(t)
	s := newScaler(t, scaler.Options{InitScale: 1024, GrowthInterval: 3})
	o := newSGD(t, d, 10)
	scale, tracker := float32(1024), 0
	// Grow at step 2, back off at 3, 6 and 7; at step 10 the interval drops
	// to 2 under a tracker of 2: equality never holds again until the
	// overflow at 14 resets the tracker, then growth resumes at 16.
	pattern := []bool{false, false, false, true, false, false, true, true, false, false, false, false, false, false, true, false, false}
	for i, inf := range pattern {
		interval := 3
		if i >= 10 {
			interval = 2
		}
		if i == 10 {
			if err := s.SetGrowthInterval(2); err != nil {
				t.Fatal(err)
			}
		}
		skipped := iterate(t, d, s, o, inf)
		scale, tracker = pyUpdate(scale, tracker, inf, 2, 0.5, interval)
		if skipped != inf {
			t.Errorf("step %d: skipped %v, want %v", i, skipped, inf)
		}
		gotScale, err := s.ScaleValue()
		if err != nil {
			t.Fatal(err)
		}
		gotTracker, _ := s.GrowthTracker()
		if float32(gotScale) != scale || gotTracker != tracker {
			t.Errorf("step %d: scale %g tracker %d, want %g %d", i, gotScale, gotTracker, scale, tracker)
		}
	}
}

// TestUpdateRuleOddFactors: factors that are not powers of two give
// PyTorch's bits (the product in double, rounded once more to float), where
// an fp32-rounded factor would drift: two backoffs of 0.8 from 65536 are
// 41943.0390625 in PyTorch, 41943.04296875 with 0.8 rounded to float.
func TestUpdateRuleOddFactors(t *testing.T) {
	d := devtest.Open(t)
	s := newScaler(t, scaler.Options{InitScale: 65536, GrowthFactor: 1.1, BackoffFactor: 0.8, GrowthInterval: 2})
	o := newSGD(t, d, 10)
	scale, tracker := float32(65536), 0
	for i, inf := range []bool{true, true, false, false, false, false, true, false, false} {
		iterate(t, d, s, o, inf)
		scale, tracker = pyUpdate(scale, tracker, inf, 1.1, 0.8, 2)
		got, err := s.ScaleValue()
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 && got != 41943.0390625 {
			t.Errorf("two backoffs of 0.8 from 65536: %v, want PyTorch's 41943.0390625", got)
		}
		if float32(got) != scale {
			t.Errorf("step %d: scale %v, want %v", i, got, scale)
		}
	}
}

// TestGrowthCap: growing past the float32 range keeps the scale and still
// resets the tracker; MaxScale and MinScale bound it.
func TestGrowthCap(t *testing.T) {
	d := devtest.Open(t)
	s := newScaler(t, scaler.Options{InitScale: 0x1p127, GrowthInterval: 1})
	o := newSGD(t, d, 4)
	iterate(t, d, s, o, false)
	if v, _ := s.ScaleValue(); v != 0x1p127 {
		t.Errorf("scale %g after blocked growth, want 2^127", v)
	}
	if tr, _ := s.GrowthTracker(); tr != 0 {
		t.Errorf("tracker %d after blocked growth, want 0", tr)
	}
	s2 := newScaler(t, scaler.Options{InitScale: 16, GrowthInterval: 1, MaxScale: 40, MinScale: 4})
	for range 3 {
		iterate(t, d, s2, o, false)
	}
	if v, _ := s2.ScaleValue(); v != 40 {
		t.Errorf("scale %g with MaxScale 40, want 40", v)
	}
	for range 6 {
		iterate(t, d, s2, o, true)
	}
	if v, _ := s2.ScaleValue(); v != 4 {
		t.Errorf("scale %g with MinScale 4 after many overflows, want 4", v)
	}
}

// TestUnscale checks the unscaled values bit for bit (a float32 multiply by
// float32(1/scale)) over several gradients, one larger than a chunk.
func TestUnscale(t *testing.T) {
	d := devtest.Open(t)
	s := newScaler(t, scaler.Options{InitScale: 3}) // 1/3 is inexact: the rounding shows
	o := newSGD(t, d, 1, 7, 20000, 257)
	before := make([][]float32, len(o.grads))
	for i, g := range o.grads {
		before[i] = values(t, g)
	}
	scaled := s.Scale(loss(t, d))
	defer scaled.Release()
	if got := values(t, scaled)[0]; got != 4.5 {
		t.Errorf("scaled loss %g, want 4.5", got)
	}
	if err := s.Unscale(o); err != nil {
		t.Fatal(err)
	}
	inv := float32(1.0 / 3.0)
	for i, g := range o.grads {
		for j, v := range values(t, g) {
			if want := before[i][j] * inv; math.Float32bits(v) != math.Float32bits(want) {
				t.Fatalf("grad %d[%d] = %g, want %g", i, j, v, want)
			}
		}
	}
}

// TestUnscaleByOne leaves bits alone, NaN payloads included.
func TestUnscaleByOne(t *testing.T) {
	d := devtest.Open(t)
	s := newScaler(t, scaler.Options{InitScale: 1})
	o := newSGD(t, d, 5)
	bits := []uint32{0x7FC01234, 0x3F800001, 0x00000001, 0x80000000, 0x7F800000}
	v := make([]float32, len(bits))
	for i, b := range bits {
		v[i] = math.Float32frombits(b)
	}
	setGrad(t, o.grads[0], v, -1, 0)
	s.Scale(loss(t, d)).Release()
	if err := s.Unscale(o); err != nil {
		t.Fatal(err)
	}
	for i, g := range values(t, o.grads[0]) {
		if math.Float32bits(g) != bits[i] {
			t.Errorf("element %d: %#08x, want %#08x untouched", i, math.Float32bits(g), bits[i])
		}
	}
}

// TestSkipAnywhere plants an inf or NaN at several places of a large
// gradient: the step is skipped, the weights stay bit-identical, the scale
// halves.
func TestSkipAnywhere(t *testing.T) {
	d := devtest.Open(t)
	const n = 1 << 20
	base := ref.Rand(n, 3)
	for _, at := range []int{0, 8191, 8192, 65535, 65536, n / 2, n - 1} { // chunk edges on a GPU and a CPU driver
		for _, bad := range []float32{float32(math.Inf(-1)), float32(math.NaN())} {
			s := newScaler(t, scaler.Options{})
			o := newSGD(t, d, 33, n)
			w0 := values(t, o.params[1])
			s.Scale(loss(t, d)).Release()
			setGrad(t, o.grads[1], base, at, bad)
			skipped, err := s.Step(o)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Update(); err != nil {
				t.Fatal(err)
			}
			if v, _ := skipped.Value(); !v {
				t.Errorf("%g at %d: step not skipped", bad, at)
			}
			for i, w := range values(t, o.params[1]) {
				if math.Float32bits(w) != math.Float32bits(w0[i]) {
					t.Fatalf("%g at %d: weight %d changed in a skipped step", bad, at, i)
				}
			}
			if v, _ := s.ScaleValue(); v != 32768 {
				t.Errorf("%g at %d: scale %g, want 32768", bad, at, v)
			}
			if n, err := s.Overflows(); n != 1 || err != nil {
				t.Errorf("%g at %d: %d overflows counted (%v), want 1", bad, at, n, err)
			}
		}
	}
}

// TestHostPath: an optimizer that cannot skip on the device is skipped by
// the scaler after one wait, and stepped normally otherwise.
func TestHostPath(t *testing.T) {
	d := devtest.Open(t)
	s := newScaler(t, scaler.Options{InitScale: 2})
	o := newSGD(t, d, 3)
	h := hostSGD{o}
	for _, inf := range []bool{true, false} {
		s.Scale(loss(t, d)).Release()
		setGrad(t, o.grads[0], []float32{2, 4, 6}, map[bool]int{true: 1, false: -1}[inf], float32(math.Inf(1)))
		stepsBefore := o.steps
		skipped, err := s.Step(h)
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := skipped.Value(); v != inf || (o.steps > stepsBefore) == inf {
			t.Errorf("inf %v: skipped %v, stepped %v", inf, v, o.steps > stepsBefore)
		}
		if err := s.Update(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNoHostWait: a step with a DeviceSkipper records no host wait.
func TestNoHostWait(t *testing.T) {
	d := devtest.Open(t)
	s := newScaler(t, scaler.Options{})
	o := newSGD(t, d, 1000, 10)
	l := loss(t, d)
	step := func() {
		scaled := s.Scale(l)
		if _, err := s.Step(o); err != nil {
			t.Fatal(err)
		}
		if err := s.Update(); err != nil {
			t.Fatal(err)
		}
		scaled.Release()
	}
	step() // the first step builds tables and flags
	before := d.Stats()
	for range 5 {
		step()
	}
	after := d.Stats()
	if after.Waits != before.Waits {
		t.Errorf("%d host waits in 5 steps, want 0", after.Waits-before.Waits)
	}
	if after.Pipelines != before.Pipelines || after.MemoryBlocks != before.MemoryBlocks {
		t.Errorf("steps created pipelines (%d) or memory blocks (%d)", after.Pipelines-before.Pipelines, after.MemoryBlocks-before.MemoryBlocks)
	}
}

// TestSeveralOptimizers: each skips on its own overflow; any backs off the
// shared scale, once.
func TestSeveralOptimizers(t *testing.T) {
	d := devtest.Open(t)
	s := newScaler(t, scaler.Options{InitScale: 8})
	a, b := newSGD(t, d, 4), newSGD(t, d, 4)
	s.Scale(loss(t, d)).Release()
	setGrad(t, b.grads[0], []float32{1, 2, 3, 4}, 2, float32(math.NaN()))
	ka, err := s.Step(a)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := s.Step(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update(); err != nil {
		t.Fatal(err)
	}
	va, _ := ka.Value()
	vb, _ := kb.Value()
	if va || !vb {
		t.Errorf("skipped a=%v b=%v, want false true", va, vb)
	}
	if v, _ := s.ScaleValue(); v != 4 {
		t.Errorf("scale %g, want 4", v)
	}
}

func TestMisuse(t *testing.T) {
	d := devtest.Open(t)
	s := newScaler(t, scaler.Options{})
	o := newSGD(t, d, 4)
	want := func(what string, err, target error) {
		t.Helper()
		if !errors.Is(err, target) {
			t.Errorf("%s: got %v, want %v", what, err, target)
		}
	}
	want("unscale before scale", s.Unscale(o), scaler.ErrNotScaled)
	_, err := s.Step(o)
	want("step before scale", err, scaler.ErrNotScaled)
	want("update before scale", s.Update(), scaler.ErrNotScaled)
	s.Scale(loss(t, d)).Release()
	want("update with no checks", s.Update(), scaler.ErrNoInfChecks)
	want("unscale", s.Unscale(o), nil)
	want("unscale twice", s.Unscale(o), scaler.ErrUnscaledTwice)
	_, err = s.Step(o)
	want("step after unscale", err, nil)
	_, err = s.Step(o)
	want("step twice", err, scaler.ErrSteppedTwice)
	want("unscale after step", s.Unscale(o), scaler.ErrAfterStep)
	want("update", s.Update(), nil)
	half := &sgd{grads: []*tensor.Tensor{tensor.Zeros(d, tensor.Float16, 4)}}
	defer half.grads[0].Release()
	want("fp16 gradients", s.Unscale(half), scaler.ErrFP16Gradients)
	_, err = s.Step(&sgd{})
	want("no gradients", err, scaler.ErrNoInfChecks)
	for _, o := range []scaler.Options{{GrowthFactor: 1}, {BackoffFactor: 1}, {BackoffFactor: -0.5},
		{InitScale: math.NaN()}, {InitScale: math.Inf(1)}, {GrowthInterval: -1}, {MinScale: 8, MaxScale: 4}, {GrowthFactor: math.Inf(1)}} {
		if _, err := scaler.New(o); !errors.Is(err, scaler.ErrOptions) {
			t.Errorf("New(%+v): got %v, want ErrOptions", o, err)
		}
	}
	want("SetGrowthFactor(NaN)", s.SetGrowthFactor(math.NaN()), scaler.ErrOptions)
	want("SetBackoffFactor(2)", s.SetBackoffFactor(2), scaler.ErrOptions)
	want("SetGrowthInterval(0)", s.SetGrowthInterval(0), scaler.ErrOptions)
}

func TestStateDict(t *testing.T) {
	d := devtest.Open(t)
	s := newScaler(t, scaler.Options{InitScale: 512, GrowthInterval: 10})
	o := newSGD(t, d, 4)
	for range 3 {
		iterate(t, d, s, o, false)
	}
	sd, err := s.StateDict()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"scale":512,"growth_factor":2,"backoff_factor":0.5,"growth_interval":10,"_growth_tracker":3}`
	if string(sd) != want {
		t.Errorf("state dict %s, want %s", sd, want)
	}
	s2 := newScaler(t, scaler.Options{})
	if err := s2.LoadStateDict(sd); err != nil {
		t.Fatal(err)
	}
	iterate(t, d, s2, o, false) // the loaded state reaches the device at the first Scale
	if v, _ := s2.ScaleValue(); v != 512 {
		t.Errorf("loaded scale %g, want 512", v)
	}
	if tr, _ := s2.GrowthTracker(); tr != 4 || s2.GrowthInterval() != 10 {
		t.Errorf("loaded tracker %d interval %d, want 4 10", tr, s2.GrowthInterval())
	}
	// As PyTorch writes it (json.dumps of GradScaler.state_dict()), into a
	// scaler that has already scaled.
	py := `{"scale": 32768.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000, "_growth_tracker": 17}`
	if err := s.LoadStateDict([]byte(py)); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.ScaleValue(); v != 32768 {
		t.Errorf("PyTorch scale %g, want 32768", v)
	}
	if tr, _ := s.GrowthTracker(); tr != 17 {
		t.Errorf("PyTorch tracker %d, want 17", tr)
	}
	for _, bad := range []string{``, `{}`, `[1]`, `{"scale": 1}`, `{"scale": "x"}`,
		`{"scale": -1, "growth_factor": 2, "backoff_factor": 0.5, "growth_interval": 2000, "_growth_tracker": 0}`,
		// A collapsed scale would skip every step after the load.
		`{"scale": 0.0, "growth_factor": 2, "backoff_factor": 0.5, "growth_interval": 2000, "_growth_tracker": 0}`,
		`{"scale": 1e-40, "growth_factor": 2, "backoff_factor": 0.5, "growth_interval": 2000, "_growth_tracker": 0}`,
		`{"scale": 1, "growth_factor": 2, "backoff_factor": 0.5, "growth_interval": 2.5, "_growth_tracker": 0}`} {
		if err := s.LoadStateDict([]byte(bad)); !errors.Is(err, scaler.ErrBadState) {
			t.Errorf("LoadStateDict(%q): got %v, want ErrBadState", bad, err)
		}
	}
	if v, _ := s.ScaleValue(); v != 32768 {
		t.Errorf("a rejected state changed the scale to %g", v)
	}
}

func TestDisabled(t *testing.T) {
	d := devtest.Open(t)
	s := newScaler(t, scaler.Options{Disabled: true})
	o := newSGD(t, d, 4)
	l := loss(t, d)
	if s.Scale(l) != l || s.Enabled() {
		t.Error("a disabled scaler must return the loss itself")
	}
	if _, err := s.Step(o); err != nil || o.steps != 1 {
		t.Errorf("disabled Step: err %v, %d steps", err, o.steps)
	}
	if v, _ := s.ScaleValue(); v != 1 {
		t.Errorf("disabled scale %g, want 1", v)
	}
	if sd, _ := s.StateDict(); string(sd) != "{}" {
		t.Errorf("disabled state dict %s, want {}", sd)
	}
	if s.Unscale(o) != nil || s.Update() != nil || s.LoadStateDict(nil) != nil {
		t.Error("disabled scaler calls must pass through")
	}
}

func TestSkippedStale(t *testing.T) {
	d := devtest.Open(t)
	s := newScaler(t, scaler.Options{})
	o := newSGD(t, d, 4)
	s.Scale(loss(t, d)).Release()
	first, err := s.Step(o)
	if err != nil {
		t.Fatal(err)
	}
	s.Update()
	for range 8 {
		iterate(t, d, s, o, false)
	}
	if _, err := first.Value(); !errors.Is(err, scaler.ErrStale) {
		t.Errorf("Skipped read 8 steps later: got %v, want ErrStale", err)
	}
}

type valueOpt struct{ g []*tensor.Tensor }

func (v valueOpt) Gradients() []*tensor.Tensor { return v.g }
func (v valueOpt) Step() error                 { return nil }

// TestUncomparableOptimizer: an optimizer the scaler cannot key is an
// error, not a panic.
func TestUncomparableOptimizer(t *testing.T) {
	d := devtest.Open(t)
	s := newScaler(t, scaler.Options{})
	s.Scale(loss(t, d)).Release()
	if err := s.Unscale(valueOpt{}); err == nil {
		t.Error("an uncomparable optimizer value was accepted")
	}
	if _, err := s.Step(valueOpt{}); err == nil {
		t.Error("an uncomparable optimizer value was accepted by Step")
	}
}

// collapsedScaler is a scaler whose scale has come down to scale at run
// time (LoadStateDict refuses a collapsed one): its initial scale where
// that is normal, else fp32's smallest normal halved by skipped steps.
func collapsedScaler(t *testing.T, d *vk.Device, scale float64) *scaler.Scaler {
	t.Helper()
	if scale >= 0x1p-126 {
		return newScaler(t, scaler.Options{InitScale: scale})
	}
	s := newScaler(t, scaler.Options{InitScale: 0x1p-126})
	o := newSGD(t, d, 5, 8)
	for v := 0x1p-126; v > scale; {
		s.Scale(loss(t, d)).Release()
		setGrad(t, o.grads[0], []float32{float32(math.Inf(1)), 0, 0, 0, 0}, -1, 0)
		if _, err := s.Step(o); err != nil {
			t.Fatal(err)
		}
		if err := s.Update(); err != nil {
			t.Fatal(err)
		}
		var err error
		if v, err = s.ScaleValue(); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestCollapsedScale: a scale so small that inv_scale is +inf (below about
// 2.9e-39, or 0 as PyTorch's scale can become) turns zero gradients into
// NaN and the others into inf in the unscale itself. The unscale flags a
// non-finite result as well as a non-finite input, so the step is skipped
// and the weights stay bit-identical, on the device-skipping path and on
// the host path. A scale of 1e-30 (inv_scale 1e30, finite) with gradients
// that overflow once unscaled is skipped the same way.
func TestCollapsedScale(t *testing.T) {
	d := devtest.Open(t)
	for _, c := range []struct {
		scale float64
		grad  []float32
	}{
		{0x1p-128, []float32{0, 0, 0, 0, 0}},
		{0x1p-128, []float32{0, 1e-3, -2, 0, 0}},
		{0, []float32{0, 0, 0, 0, 0}},
		{0, []float32{0, 1e-3, -2, 0, 0}},
		{1e-30, []float32{0, 1e-3, 1e10, 0, 0}},
	} {
		for _, host := range []bool{false, true} {
			s := collapsedScaler(t, d, c.scale)
			o := newSGD(t, d, 5, 9000)
			w0 := [][]float32{values(t, o.params[0]), values(t, o.params[1])}
			s.Scale(loss(t, d)).Release()
			setGrad(t, o.grads[0], c.grad, -1, 0)
			setGrad(t, o.grads[1], make([]float32, 9000), -1, 0)
			var opt scaler.Optimizer = o
			if host {
				opt = hostSGD{o}
			}
			skipped, err := s.Step(opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Update(); err != nil {
				t.Fatal(err)
			}
			if v, err := skipped.Value(); !v || err != nil {
				t.Errorf("scale %g, grads %v, host %v: skipped %v (%v), want true", c.scale, c.grad, host, v, err)
			}
			for i, p := range o.params {
				for j, w := range values(t, p) {
					if math.Float32bits(w) != math.Float32bits(w0[i][j]) {
						t.Fatalf("scale %g, grads %v, host %v: weight %d[%d] became %g: the step was not skipped", c.scale, c.grad, host, i, j, w)
					}
				}
			}
		}
	}
}

// TestCollapsedScaleRefused: a checkpoint's collapsed scale would skip
// every step after the load and train nothing: it is an error naming it.
func TestCollapsedScaleRefused(t *testing.T) {
	s := newScaler(t, scaler.Options{InitScale: 8})
	for _, v := range []string{"0.0", "-0.0", "1e-39", "1.4e-45"} {
		sd := `{"scale": ` + v + `, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000, "_growth_tracker": 0}`
		err := s.LoadStateDict([]byte(sd))
		if !errors.Is(err, scaler.ErrBadState) || !strings.Contains(err.Error(), "scale") {
			t.Errorf("scale %s: got %v, want ErrBadState naming the scale", v, err)
		}
	}
	if v, _ := s.ScaleValue(); v != 8 {
		t.Errorf("a refused state changed the scale to %g", v)
	}
}
