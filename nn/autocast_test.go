package nn_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/amp"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// tHalf uploads vals as an fp16 tensor.
func tHalf(t testing.TB, d *vk.Device, vals []float32, shape ...int) *tensor.Tensor {
	t.Helper()
	x := tensor.Cast(tInput(t, d, vals, shape...), f16)
	t.Cleanup(x.Release)
	return x
}

// TestAutocast runs the autocast tests on one device (the kernels are built
// once).
func TestAutocast(t *testing.T) {
	d := devtest.Open(t)
	t.Run("MatchesCastInputs", func(t *testing.T) { autocastMatchesCastInputs(t, d) })
	t.Run("FP32OnlyWithoutAutocast", func(t *testing.T) { fp32OnlyWithoutAutocast(t, d) })
	t.Run("Nesting", func(t *testing.T) { autocastNesting(t, d) })
	t.Run("WeightCache", func(t *testing.T) { autocastWeightCache(t, d) })
	t.Run("MemoryFlat", func(t *testing.T) { autocastMemoryFlat(t, d) })
}

// The autocast contract: an op's output under autocast equals, bit for bit,
// the same op run with autocast off on its inputs cast to the dtype the
// policy chose.
func autocastMatchesCastInputs(t *testing.T, d *vk.Device) {
	w := tParam(t, d, "w", tRand(4*5, 1, 1, f32), 4, 5)
	b := tParam(t, d, "b", tRand(4, 2, 1, f32), 4)
	labels := tLabels(t, d, 3, 0, 2)
	x32 := func() *tensor.Tensor { return tInput(t, d, tRand(15, 3, 2, f32), 3, 5) }
	x16 := func() *tensor.Tensor { return tHalf(t, d, tRand(15, 4, 2, f32), 3, 5) }
	type input struct {
		t *tensor.Tensor // nil: the parameter p
		p *nn.Param
	}
	cases := []struct {
		name   string
		op     tensor.Op
		policy amp.Policy
		in     []input
		casts  []tensor.DType // the dtype the policy chooses for each input
		out    tensor.DType
		run    func(g *nn.Graph, v []*nn.Var) *nn.Var
	}{
		{"matmul", tensor.OpMatMul, amp.Lower, []input{{t: x32()}, {t: tInput(t, d, tRand(20, 5, 1, f32), 5, 4)}}, []tensor.DType{f16, f16}, f16,
			func(g *nn.Graph, v []*nn.Var) *nn.Var { return g.MatMul(v[0], v[1], false, false) }},
		{"matmul of fp16 and fp32", tensor.OpMatMul, amp.Lower, []input{{t: x16()}, {p: w}}, []tensor.DType{f16, f16}, f16,
			func(g *nn.Graph, v []*nn.Var) *nn.Var { return g.MatMul(v[0], v[1], false, true) }},
		{"linear", tensor.OpLinear, amp.Lower, []input{{t: x32()}, {p: w}, {p: b}}, []tensor.DType{f16, f16, f16}, f16,
			func(g *nn.Graph, v []*nn.Var) *nn.Var { return g.Linear(v[0], v[1], v[2]) }},
		{"add fp16 + fp32", tensor.OpAdd, amp.Keep, []input{{t: x16()}, {t: x32()}}, []tensor.DType{f32, f32}, f32,
			func(g *nn.Graph, v []*nn.Var) *nn.Var { return g.Add(v[0], v[1]) }},
		{"add fp16 + fp16", tensor.OpAdd, amp.Keep, []input{{t: x16()}, {t: x16()}}, []tensor.DType{f16, f16}, f16,
			func(g *nn.Graph, v []*nn.Var) *nn.Var { return g.Add(v[0], v[1]) }},
		{"mean", tensor.OpMean, amp.Keep, []input{{t: x16()}}, []tensor.DType{f16}, f32,
			func(g *nn.Graph, v []*nn.Var) *nn.Var { return g.Mean(v[0]) }},
		{"sum", tensor.OpSum, amp.FP32, []input{{t: x16()}}, []tensor.DType{f32}, f32,
			func(g *nn.Graph, v []*nn.Var) *nn.Var { return g.Sum(v[0]) }},
		{"mse_loss", tensor.OpMSELoss, amp.FP32, []input{{t: x16()}, {t: x32()}}, []tensor.DType{f32, f32}, f32,
			func(g *nn.Graph, v []*nn.Var) *nn.Var { return g.MSELoss(v[0], v[1], nn.Mean) }},
		{"cross_entropy", tensor.OpCrossEntropy, amp.FP32, []input{{t: x16()}}, []tensor.DType{f32}, f32,
			func(g *nn.Graph, v []*nn.Var) *nn.Var { return g.CrossEntropyLoss(v[0], labels, nn.Mean) }},
		{"layer_norm", tensor.OpLayerNorm, amp.FP32, []input{{t: x16()}, {t: tHalf(t, d, tRand(5, 6, 1, f32), 5)}, {t: tInput(t, d, tRand(5, 7, 1, f32), 5)}},
			[]tensor.DType{f32, f32, f32}, f32,
			func(g *nn.Graph, v []*nn.Var) *nn.Var { return g.LayerNorm(v[0], v[1], v[2], 1e-5) }},
		{"relu fp16", tensor.OpReLU, amp.Keep, []input{{t: x16()}}, []tensor.DType{f16}, f16,
			func(g *nn.Graph, v []*nn.Var) *nn.Var { return g.ReLU(v[0]) }},
		{"relu fp32", tensor.OpReLU, amp.Keep, []input{{t: x32()}}, []tensor.DType{f32}, f32,
			func(g *nn.Graph, v []*nn.Var) *nn.Var { return g.ReLU(v[0]) }},
	}
	for i, c := range cases {
		if got := amp.PolicyOf(c.op); got != c.policy {
			t.Errorf("case %d (%s): policy %s, want %s", i, c.name, got, c.policy)
		}
		vars := func(g *nn.Graph) []*nn.Var {
			vs := make([]*nn.Var, len(c.in))
			for j, in := range c.in {
				if in.p != nil {
					vs[j] = g.Param(in.p)
				} else {
					vs[j] = g.Input(in.t)
				}
			}
			return vs
		}
		on := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16})
		got := c.run(on, vars(on))
		off := nn.NewGraph(d, nn.Options{})
		vs := vars(off)
		for j := range vs {
			vs[j] = off.Cast(vs[j], c.casts[j])
		}
		want := c.run(off, vs)
		if got.DType() != c.out || want.DType() != c.out {
			t.Errorf("case %d (%s): dtype %s under autocast, %s without; want %s", i, c.name, got.DType(), want.DType(), c.out)
		}
		tSameBits(t, fmt.Sprintf("case %d (%s)", i, c.name), tRead(t, got.Value()), tRead(t, want.Value()))
		on.Release()
		off.Release()
	}
}

// layer_norm and the losses have fp32 kernels only. Without autocast they
// widen fp16 inputs to fp32 (PyTorch would run them in fp16): the same
// bits, forward and gradient, as the inputs cast to fp32 by hand.
func fp32OnlyWithoutAutocast(t *testing.T, d *vk.Device) {
	x := tParam(t, d, "x", tRand(15, 8, 1, f16), 3, 5)
	gamma := tParam(t, d, "gamma", tRand(5, 9, 1, f16), 5)
	beta := tParam(t, d, "beta", tRand(5, 10, 1, f16), 5)
	target := tHalf(t, d, tRand(15, 11, 1, f32), 3, 5)
	labels := tLabels(t, d, 3, 0, 2)
	cases := []struct {
		name string
		run  func(g *nn.Graph, in func(p *nn.Param) *nn.Var) *nn.Var
	}{
		{"layer_norm", func(g *nn.Graph, in func(p *nn.Param) *nn.Var) *nn.Var {
			return g.Sum(g.LayerNorm(in(x), in(gamma), in(beta), 1e-5))
		}},
		{"mse_loss", func(g *nn.Graph, in func(p *nn.Param) *nn.Var) *nn.Var {
			return g.MSELoss(in(x), g.Input(target), nn.Mean)
		}},
		{"cross_entropy", func(g *nn.Graph, in func(p *nn.Param) *nn.Var) *nn.Var {
			return g.CrossEntropyLoss(in(x), labels, nn.Mean)
		}},
	}
	for _, c := range cases {
		// run returns the loss and x's gradient, with the fp16 inputs
		// widened by the op or, when byHand, by the caller.
		run := func(byHand bool) (loss, grad []float32) {
			t.Helper()
			for _, p := range []*nn.Param{x, gamma, beta} {
				if err := p.ZeroGrad(); err != nil {
					t.Fatal(err)
				}
			}
			g := nn.NewGraph(d, nn.Options{})
			defer g.Release()
			in := func(p *nn.Param) *nn.Var {
				v := g.Cast(g.Param(p), f16)
				if byHand {
					v = g.Cast(v, f32)
				}
				return v
			}
			l := c.run(g, in)
			if l.DType() != f32 {
				t.Errorf("%s without autocast on fp16 inputs: %s, want float32", c.name, l.DType())
			}
			if err := g.Backward(l, nil); err != nil {
				t.Fatal(err)
			}
			return tRead(t, l.Value()), tRead(t, x.Grad)
		}
		gotLoss, gotGrad := run(false)
		wantLoss, wantGrad := run(true)
		tSameBits(t, c.name+" value", gotLoss, wantLoss)
		tSameBits(t, c.name+" gradient", gotGrad, wantGrad)
	}
}

// WithAutocast(false, f) inside an autocast graph runs f in fp32, and the
// enclosing state comes back after, also when f panics.
func autocastNesting(t *testing.T, d *vk.Device) {
	a := tInput(t, d, tRand(6, 1, 1, f32), 2, 3)
	b := tInput(t, d, tRand(12, 2, 1, f32), 3, 4)
	mm := func(g *nn.Graph) tensor.DType { return g.MatMul(g.Input(a), g.Input(b), false, false).DType() }

	g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16})
	defer g.Release()
	outer := g.Autocast()
	if dt := mm(g); dt != f16 {
		t.Errorf("autocast matmul is %s, want float16", dt)
	}
	g.WithAutocast(false, func() {
		if g.Autocast().Enabled() {
			t.Error("autocast on inside WithAutocast(false)")
		}
		if dt := mm(g); dt != f32 {
			t.Errorf("matmul inside WithAutocast(false) is %s, want float32", dt)
		}
		g.WithAutocast(true, func() {
			if dt := mm(g); dt != f16 {
				t.Errorf("matmul inside WithAutocast(true) inside WithAutocast(false) is %s, want float16", dt)
			}
		})
		if dt := mm(g); dt != f32 {
			t.Errorf("matmul after the inner region is %s, want float32", dt)
		}
	})
	if g.Autocast() != outer || !g.Autocast().Enabled() {
		t.Error("the outer region did not come back after WithAutocast")
	}
	if dt := mm(g); dt != f16 {
		t.Errorf("matmul after WithAutocast is %s, want float16", dt)
	}
	func() {
		defer func() { recover() }()
		g.WithAutocast(false, func() { panic("boom") })
	}()
	if g.Autocast() != outer {
		t.Error("the outer region did not come back after a panic in WithAutocast")
	}

	off := nn.NewGraph(d, nn.Options{})
	defer off.Release()
	off.WithAutocast(true, func() {
		if dt := mm(off); dt != f16 {
			t.Errorf("matmul inside WithAutocast(true) of a plain graph is %s, want float16", dt)
		}
	})
	if dt := mm(off); dt != f32 || off.Autocast().Enabled() {
		t.Errorf("after WithAutocast(true) of a plain graph: matmul is %s, autocast %v", dt, off.Autocast().Enabled())
	}
}

// A parameter used by two linear ops of one graph is cast once; the cast is
// freed by Release, and both uses carry gradient.
func autocastWeightCache(t *testing.T, d *vk.Device) {
	w := tParam(t, d, "w", tRand(16, 1, 1, f16), 4, 4)
	x := tInput(t, d, tRand(8, 2, 1, f16), 2, 4)
	run := func(autocast bool) []float32 {
		t.Helper()
		if err := w.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		before := d.Stats().LiveBuffers
		g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(autocast, tensor.Float16)})
		var h *nn.Var
		if autocast {
			h = g.Linear(g.Linear(g.Input(x), g.Param(w), nil), g.Param(w), nil)
		} else {
			// Each use casts the parameter (from the cache), as autocast does.
			h = g.Linear(g.Linear(g.Cast(g.Input(x), f16), g.Cast(g.Param(w), f16), nil), g.Cast(g.Param(w), f16), nil)
		}
		if err := g.Backward(g.Sum(h), nil); err != nil {
			t.Fatal(err)
		}
		r := g.Autocast()
		if n := r.CachedCasts(); n != 1 {
			t.Errorf("autocast %v: %d cached casts, want 1", autocast, n)
		}
		grad := tRead(t, w.Grad)
		g.Release()
		if n := r.CachedCasts(); n != 0 {
			t.Errorf("autocast %v: %d cached casts after Release, want 0", autocast, n)
		}
		if after := d.Stats().LiveBuffers; after != before {
			t.Errorf("autocast %v: %d live buffers before the graph, %d after Release", autocast, before, after)
		}
		return grad
	}
	tSameBits(t, "weight gradient through the cached cast", run(true), run(false))
}

// A training step under autocast with a loss scaler (forward, backward, step,
// Release) keeps device memory flat over 200 steps, and trains.
func autocastMemoryFlat(t *testing.T, d *vk.Device) {
	rng := rand.New(rand.NewPCG(1, 2))
	model := nn.Sequential{
		nn.NewLinear(d, "fc1", 8, 16, rng), nn.GELU{}, nn.NewLayerNorm(d, "ln", 16),
		&nn.Dropout{P: 0.1, Training: true}, nn.NewLinear(d, "fc2", 16, 4, rng),
	}
	t.Cleanup(func() { nn.Close(model) })
	opt, err := nn.NewAdam(model.Parameters(), nn.AdamOptions{LR: 1e-2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opt.Close() })
	s, err := scaler.New(scaler.Options{InitScale: 256})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	x := tInput(t, d, tRand(32*8, 3, 1, f32), 32, 8)
	labelVals := make([]int32, 32)
	for i := range labelVals {
		labelVals[i] = int32(i % 4)
	}
	labels := tLabels(t, d, labelVals...)

	const steps = 200
	seeds := nn.NewSeedSource(1)
	var first, last float32
	var at20 vk.Stats
	for step := 1; step <= steps; step++ {
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16, Seeds: seeds})
		loss := g.CrossEntropyLoss(model.Forward(g, g.Input(x)), labels, nn.Mean)
		if err := g.Backward(loss, s.Seed(loss.Value())); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Step(opt); err != nil {
			t.Fatal(err)
		}
		if err := s.Update(); err != nil {
			t.Fatal(err)
		}
		if step == 1 || step == steps {
			v, err := loss.Value().Item()
			if err != nil {
				t.Fatal(err)
			}
			if step == 1 {
				first = v
			}
			last = v
		}
		g.Release()
		if step == 20 || step == steps {
			if err := d.Wait(); err != nil {
				t.Fatal(err)
			}
			if step == 20 {
				at20 = d.Stats()
			}
		}
	}
	end := d.Stats()
	if end.DeviceBytes != at20.DeviceBytes || end.LiveBuffers != at20.LiveBuffers || end.BufferBytes != at20.BufferBytes {
		t.Errorf("after step 20: %d device bytes, %d live buffers of %d bytes; after step %d: %d, %d, %d",
			at20.DeviceBytes, at20.LiveBuffers, at20.BufferBytes, steps, end.DeviceBytes, end.LiveBuffers, end.BufferBytes)
	}
	if !(last < first) {
		t.Errorf("loss went from %g to %g: the loop does not train", first, last)
	}
	t.Logf("%d steps: loss %g -> %g; %d live buffers, %d device bytes, %d dispatches", steps, first, last, end.LiveBuffers, end.DeviceBytes, end.Dispatches)
}

// TestAutocastOption: Options.Autocast is the region's dtype and its zero
// value is off: a Linear under the zero value computes in fp32, under
// Float16 or BFloat16 in that dtype, under AutocastTo(false, ...) in fp32;
// another dtype panics with a *tensor.DTypeError.
func TestAutocastOption(t *testing.T) {
	d := devtest.Open(t)
	l := nn.NewLinear(d, "fc", 4, 3, rand.New(rand.NewPCG(1, 2)))
	defer nn.Close(l)
	x := tInput(t, d, make([]float32, 8), 2, 4)
	for _, c := range []struct {
		name string
		o    nn.Options
		want tensor.DType
	}{
		{"zero value", nn.Options{}, tensor.Float32},
		{"Float16", nn.Options{Autocast: tensor.Float16}, tensor.Float16},
		{"BFloat16", nn.Options{Autocast: tensor.BFloat16}, tensor.BFloat16},
		{"AutocastTo(false)", nn.Options{Autocast: nn.AutocastTo(false, tensor.Float16)}, tensor.Float32},
		{"AutocastTo(true)", nn.Options{Autocast: nn.AutocastTo(true, tensor.BFloat16)}, tensor.BFloat16},
	} {
		g := nn.NewGraph(d, c.o)
		if got := l.Forward(g, g.Input(x)).DType(); got != c.want {
			t.Errorf("%s: a Linear computes in %s, want %s", c.name, got, c.want)
		}
		g.Release()
	}
	msg := tPanics(t, "Int32 autocast", func() { nn.NewGraph(d, nn.Options{Autocast: tensor.Int32}) })
	tContains(t, "Int32 autocast", msg, "int32")
}
