package nn_test

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/amp"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// Custom functions (nn.Function, Graph.Apply): gradient checks against
// float64 central differences as TestGradients, ownership, and misuse.

// siluFunction is a hand-written x*sigmoid(x) with its backward, computed
// in the input's dtype: dx = dy (s + y - y s) for s = sigmoid(x), y = x s.
func siluFunction(cast amp.Policy) *nn.Function {
	return &nn.Function{
		Name: "SiLU",
		Forward: func(in []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
			x := in[0]
			s := tensor.Sigmoid(x, x.DType())
			y := tensor.Mul(x, s, x.DType())
			return y, []*tensor.Tensor{s, y}
		},
		Backward: func(saved, _ []*tensor.Tensor, dy *tensor.Tensor) []*tensor.Tensor {
			s, y := saved[0], saved[1]
			dt := s.DType()
			ys := tensor.Mul(y, s, dt)
			defer ys.Release()
			a := tensor.Add(s, y, dt)
			defer a.Release()
			d := tensor.Sub(a, ys, dt)
			defer d.Release()
			return []*tensor.Tensor{tensor.Mul(dy, d, dt)}
		},
		CastInputs: cast,
	}
}

// mmFunction is PyTorch's MyMM: a b with a [m, k], b [k, n].
func mmFunction(cast amp.Policy) *nn.Function {
	return &nn.Function{
		Name: "MyMM",
		Forward: func(in []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
			a, b := in[0], in[1]
			return tensor.MatMul(a, b, tensor.MatMulOpts{Out: a.DType()}), in
		},
		Backward: func(saved, _ []*tensor.Tensor, grad *tensor.Tensor) []*tensor.Tensor {
			a, b := saved[0], saved[1]
			return []*tensor.Tensor{
				tensor.MatMul(grad, b, tensor.MatMulOpts{TransB: true, Out: a.DType()}),
				tensor.MatMul(a, grad, tensor.MatMulOpts{TransA: true, Out: b.DType()}),
			}
		},
		CastInputs: cast,
	}
}

func silu64(x float64) float64 { return x / (1 + math.Exp(-x)) }

func TestFunctionGradients(t *testing.T) {
	d := devtest.Open(t)
	const m, k, n = 3, 5, 4
	cases := []gradCase{
		{
			// Keep: in the fp16 run the function gets fp16 and computes in fp16.
			name: "custom SiLU", shapes: [][]int{{3, 5}}, k: ref.ExpRoundings + 8, out16: true,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, 3) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Apply(siluFunction(amp.Keep), in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], silu64) },
		},
		{
			// custom_fwd(cast_inputs=torch.float32): fp16 in, fp32 out, and
			// the gradient cast back to fp16.
			name: "custom SiLU cast_inputs=fp32", shapes: [][]int{{3, 5}}, k: ref.ExpRoundings + 8,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, 3) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Apply(siluFunction(amp.FP32), in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], silu64) },
		},
		{
			// matmul's policy: fp32 parameters in, cast to fp16 by the function's
			// policy under autocast, as the built-in matmul does.
			name: "custom MyMM", shapes: [][]int{{m, k}, {k, n}}, k: 4*k + 4, lower: true, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var {
				return g.Apply(mmFunction(amp.PolicyOf(tensor.OpMatMul)), in[0], in[1])
			},
			host: func(in [][]float64) []float64 { return hostMatMul(in[0], in[1], m, k, n, false, false) },
		},
	}
	for _, c := range cases {
		for _, dt := range []tensor.DType{f32, f16} {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) { checkGradCase(t, d, c, dt) })
		}
	}
}

// The graph owns what a custom function returns, and nothing else: an
// input's tensor returned as the output, saved or returned as a gradient
// stays its owner's, and everything the function made is freed by Release.
func TestFunctionOwnership(t *testing.T) {
	d := devtest.Open(t)
	p := tParam(t, d, "w", []float32{1, -2, 3}, 3)
	x := tInput(t, d, []float32{0.5, 0.25, -1}, 3)
	// f(w, x) = w, saving both inputs, with a backward that gives w the
	// gradient x (an input's tensor) whatever dy: not a derivative, a probe
	// of ownership.
	passthrough := &nn.Function{
		Name: "Passthrough",
		Forward: func(in []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
			return in[0], in
		},
		Backward: func(saved, in []*tensor.Tensor, dy *tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{in[1], nil}
		},
	}
	before := d.Stats().LiveBuffers
	g := nn.NewGraph(d, nn.Options{})
	y := g.Apply(passthrough, g.Param(p), g.Input(x))
	z := g.Apply(siluFunction(amp.Keep), y)
	if err := g.Backward(g.Sum(z), nil); err != nil {
		t.Fatal(err)
	}
	g.Release()
	if after := d.Stats().LiveBuffers; after != before {
		t.Errorf("live buffers %d after the graph's release, %d before", after, before)
	}
	tSameBits(t, "the parameter after Release", tRead(t, p.Value), []float32{1, -2, 3})
	tSameBits(t, "the input after Release", tRead(t, x), []float32{0.5, 0.25, -1})
	// The passthrough's backward gives x whatever dy: w's gradient is x.
	tSameBits(t, "the parameter's gradient", tRead(t, p.Grad), []float32{0.5, 0.25, -1})
}

// tPanicErr runs f and returns the error it panicked with (nil, and a
// failure, when it did not panic with an error).
func tPanicErr(t *testing.T, what string, f func()) (err error) {
	t.Helper()
	defer func() {
		r := recover()
		e, ok := r.(error)
		if !ok {
			t.Errorf("%s: panic value %T %v, want an error", what, r, r)
		}
		err = e
	}()
	f()
	return nil
}

func TestFunctionMisuse(t *testing.T) {
	d := devtest.Open(t)
	p := tParam(t, d, "w", []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	// bad returns a function whose backward returns grads(w's tensor).
	bad := func(grads func(x *tensor.Tensor) []*tensor.Tensor) *nn.Function {
		return &nn.Function{
			Name: "Bad",
			Forward: func(in []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
				return tensor.Scale(in[0], 2, in[0].DType()), nil
			},
			Backward: func(_, in []*tensor.Tensor, dy *tensor.Tensor) []*tensor.Tensor {
				return grads(in[0])
			},
		}
	}
	zeros := func(dt tensor.DType, shape ...int) *tensor.Tensor {
		z := tensor.Zeros(d, dt, shape...)
		t.Cleanup(z.Release) // a gradient the engine refuses before taking it
		return z
	}
	backward := func(f *nn.Function) {
		g := nn.NewGraph(d, nn.Options{})
		defer g.Release()
		g.Backward(g.Sum(g.Apply(f, g.Param(p))), nil)
	}
	var ue *tensor.UsageError
	var se *tensor.ShapeError
	var de *tensor.DTypeError
	cases := []struct {
		name string
		f    func()
		as   any
		op   string
	}{
		{"nil function", func() {
			g := nn.NewGraph(d, nn.Options{})
			defer g.Release()
			g.Apply(nil)
		}, &ue, "Apply"},
		{"nil Forward", func() {
			g := nn.NewGraph(d, nn.Options{})
			defer g.Release()
			g.Apply(&nn.Function{Name: "Bad"}, g.Param(p))
		}, &ue, "Apply Bad"},
		{"Forward and ForwardAutocast", func() {
			g := nn.NewGraph(d, nn.Options{})
			defer g.Release()
			f := bad(nil)
			f.ForwardAutocast = func(nn.Autocast, []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) { return nil, nil }
			g.Apply(f, g.Param(p))
		}, &ue, "Apply Bad"},
		{"nil Backward", func() {
			g := nn.NewGraph(d, nn.Options{})
			defer g.Release()
			f := bad(nil)
			f.Backward = nil
			g.Apply(f, g.Param(p))
		}, &ue, "Apply Bad"},
		{"nil output", func() {
			g := nn.NewGraph(d, nn.Options{})
			defer g.Release()
			f := bad(nil)
			f.Forward = func([]*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) { return nil, nil }
			g.Apply(f, g.Param(p))
		}, &ue, "Apply Bad"},
		{"nil input", func() {
			g := nn.NewGraph(d, nn.Options{})
			defer g.Release()
			g.Apply(bad(nil), nil)
		}, &ue, "Apply Bad"},
		{"input of another graph", func() {
			g, h := nn.NewGraph(d, nn.Options{}), nn.NewGraph(d, nn.Options{})
			defer g.Release()
			defer h.Release()
			g.Apply(bad(nil), h.Param(p))
		}, &ue, "Apply Bad"},
		{"two gradients for one input", func() {
			backward(bad(func(x *tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{zeros(f32, 2, 3), zeros(f32, 2, 3)}
			}))
		}, &ue, `custom "Bad"`},
		{"no gradient for an input that needs one", func() {
			backward(bad(func(x *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{nil} }))
		}, &ue, `custom "Bad"`},
		{"gradient of the wrong shape", func() {
			backward(bad(func(x *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{zeros(f32, 3, 2)} }))
		}, &se, `custom "Bad" backward`},
		{"gradient of the wrong dtype", func() {
			backward(bad(func(x *tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{zeros(f16, 2, 3)} }))
		}, &de, `custom "Bad" backward`},
	}
	for _, c := range cases {
		err := tPanicErr(t, c.name, c.f)
		if err == nil {
			continue
		}
		var op string
		switch as := c.as.(type) {
		case **tensor.UsageError:
			if errors.As(err, as) {
				op = (*as).Op
			}
		case **tensor.ShapeError:
			if errors.As(err, as) {
				op = (*as).Op
			}
		case **tensor.DTypeError:
			if errors.As(err, as) {
				op = (*as).Op
			}
		}
		if op != c.op {
			t.Errorf("%s: panic %T %v, want a %T for op %q", c.name, err, err, c.as, c.op)
		}
	}
	tSameBits(t, "the parameter's gradient after misuse", tRead(t, p.Grad), make([]float32, 6))
}

// A custom function on a NoGrad graph records nothing and needs no Backward.
func TestFunctionNoGrad(t *testing.T) {
	d := devtest.Open(t)
	x := tInput(t, d, []float32{-1, 0, 2}, 3)
	g := nn.NewGraph(d, nn.Options{NoGrad: true})
	defer g.Release()
	f := siluFunction(amp.Keep)
	f.Backward = nil
	y := g.Apply(f, g.Input(x))
	ref.Check(t, "silu", tRead(t, y.Value()), mapf([]float64{-1, 0, 2}, silu64), []float64{1, 1, 1}, ref.Tol(f32, ref.ExpRoundings))
}

// CastInputs is custom_fwd's cast_inputs, by policy: under autocast the
// floating inputs reach Forward cast (Int32 ones never), outside autocast
// as they are.
func TestFunctionCastInputs(t *testing.T) {
	d := devtest.Open(t)
	p := tParam(t, d, "w", []float32{1, 2}, 2)
	h := tensor.FromFloat32(d, []float32{3, 4}, 2)
	h16 := tensor.Cast(h, f16)
	h.Release()
	t.Cleanup(h16.Release)
	idx := tLabels(t, d, 0, 1)
	bf16 := tensor.BFloat16
	cases := []struct {
		policy   amp.Policy
		autocast bool
		region   tensor.DType
		want     []tensor.DType // what Forward sees for w (fp32), h (fp16), idx
	}{
		{amp.Keep, true, f16, []tensor.DType{f32, f16, tensor.Int32}},
		{amp.FP32, true, f16, []tensor.DType{f32, f32, tensor.Int32}},
		{amp.Lower, true, bf16, []tensor.DType{bf16, bf16, tensor.Int32}},
		{amp.Widest, true, f16, []tensor.DType{f32, f32, tensor.Int32}},
		{amp.FP32, false, f16, []tensor.DType{f32, f16, tensor.Int32}},
		{amp.Lower, false, f16, []tensor.DType{f32, f16, tensor.Int32}},
	}
	for _, c := range cases {
		var got []tensor.DType
		f := &nn.Function{
			Name: "Probe",
			Forward: func(in []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
				got = nil
				for _, x := range in {
					got = append(got, x.DType())
				}
				return tensor.Add(in[0], in[1], f32), nil
			},
			Backward: func(_, in []*tensor.Tensor, dy *tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{tensor.Cast(dy, in[0].DType()), nil, nil}
			},
			CastInputs: c.policy,
		}
		g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(c.autocast, c.region)})
		y := g.Apply(f, g.Param(p), g.Input(h16), g.Input(idx))
		if err := g.Backward(g.Sum(y), nil); err != nil {
			t.Fatal(err)
		}
		g.Release()
		if !slices.Equal(got, c.want) {
			t.Errorf("policy %s, autocast %v (%s): Forward saw %v, want %v", c.policy, c.autocast, c.region, got, c.want)
		}
	}
	// The gradient went back through the casts to the fp32 parameter:
	// d sum(w + h)/dw = 1 per backward, six backwards.
	tSameBits(t, "w's gradient", tRead(t, p.Grad), []float32{6, 6})
}

// ForwardAutocast is custom_fwd without cast_inputs: PyTorch's MyMM, whose
// a.mm(b) autocasts, computes in fp16 in an fp16 region, bf16 in a bf16
// one, fp32 outside autocast, and in fp32 with CastInputs FP32 (autocast
// off inside, as cast_inputs turns it off); its gradients reach the fp32
// weight.
func TestFunctionForwardAutocast(t *testing.T) {
	d := devtest.Open(t)
	w := tParam(t, d, "w", []float32{1, 2, 3, 4}, 2, 2)
	x := tensor.FromFloat32(d, []float32{1, 0, 0, 1}, 2, 2)
	t.Cleanup(x.Release)
	var ran tensor.DType
	var on bool
	mymm := func(policy amp.Policy) *nn.Function {
		return &nn.Function{
			Name:       "MyMM",
			CastInputs: policy,
			ForwardAutocast: func(ac nn.Autocast, in []*tensor.Tensor) (*tensor.Tensor, []*tensor.Tensor) {
				a, b := in[0], in[1]
				ran, on = ac.DType(tensor.OpMatMul, a, b), ac.Enabled()
				return tensor.MatMul(a, b, tensor.MatMulOpts{Out: ran}), in
			},
			Backward: func(saved, _ []*tensor.Tensor, dy *tensor.Tensor) []*tensor.Tensor {
				a, b := saved[0], saved[1]
				return []*tensor.Tensor{
					tensor.MatMul(dy, b, tensor.MatMulOpts{TransB: true, Out: a.DType()}),
					tensor.MatMul(a, dy, tensor.MatMulOpts{TransA: true, Out: b.DType()}),
				}
			},
		}
	}
	for _, c := range []struct {
		autocast bool
		region   tensor.DType
		policy   amp.Policy
		want     tensor.DType
	}{
		{true, f16, amp.Keep, f16},
		{true, tensor.BFloat16, amp.Keep, tensor.BFloat16},
		{false, f16, amp.Keep, f32},
		{true, f16, amp.FP32, f32},
	} {
		g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(c.autocast, c.region)})
		y := g.Apply(mymm(c.policy), g.Input(x), g.Param(w))
		if y.DType() != c.want || ran != c.want || on != (c.autocast && c.policy == amp.Keep) {
			t.Errorf("autocast %v (%s), CastInputs %s: ran in %s (autocast on %v), output %s; want %s", c.autocast, c.region, c.policy, ran, on, y.DType(), c.want)
		}
		if err := g.Backward(g.Sum(g.Cast(y, f32)), nil); err != nil {
			t.Fatal(err)
		}
		g.Release()
	}
	// d sum(x w)/dw with x the identity: ones, four backwards.
	tSameBits(t, "w's gradient", tRead(t, w.Grad), []float32{4, 4, 4, 4})
}
