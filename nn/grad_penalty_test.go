package nn_test

import (
	"math"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// A two-layer tanh MLP with an MSE loss, in float64 on the host: the
// reference for gradients of gradients.
type gpNet struct {
	n, in, hid, out int
	x, t            []float64
}

// grads returns the loss and its gradients with respect to w1, b1, w2, b2
// (flattened in that order) at theta.
func (m gpNet) grads(theta []float64) (float64, []float64) {
	w1 := theta[:m.hid*m.in]
	b1 := theta[m.hid*m.in : m.hid*m.in+m.hid]
	w2 := theta[m.hid*m.in+m.hid : m.hid*m.in+m.hid+m.out*m.hid]
	b2 := theta[m.hid*m.in+m.hid+m.out*m.hid:]
	h := make([]float64, m.n*m.hid)
	y := make([]float64, m.n*m.out)
	for r := range m.n {
		for j := range m.hid {
			z := b1[j]
			for k := range m.in {
				z += m.x[r*m.in+k] * w1[j*m.in+k]
			}
			h[r*m.hid+j] = math.Tanh(z)
		}
		for o := range m.out {
			v := b2[o]
			for j := range m.hid {
				v += h[r*m.hid+j] * w2[o*m.hid+j]
			}
			y[r*m.out+o] = v
		}
	}
	loss := 0.0
	dy := make([]float64, len(y))
	for i := range y {
		d := y[i] - m.t[i]
		loss += d * d / float64(len(y))
		dy[i] = 2 * d / float64(len(y))
	}
	g := make([]float64, len(theta))
	gw1, gb1 := g[:len(w1)], g[len(w1):len(w1)+len(b1)]
	gw2, gb2 := g[len(w1)+len(b1):len(w1)+len(b1)+len(w2)], g[len(w1)+len(b1)+len(w2):]
	for r := range m.n {
		for o := range m.out {
			gb2[o] += dy[r*m.out+o]
			for j := range m.hid {
				gw2[o*m.hid+j] += dy[r*m.out+o] * h[r*m.hid+j]
			}
		}
		for j := range m.hid {
			dh := 0.0
			for o := range m.out {
				dh += dy[r*m.out+o] * w2[o*m.hid+j]
			}
			dz := dh * (1 - h[r*m.hid+j]*h[r*m.hid+j])
			gb1[j] += dz
			for k := range m.in {
				gw1[j*m.in+k] += dz * m.x[r*m.in+k]
			}
		}
	}
	return loss, g
}

// penalized is PyTorch's gradient-penalty objective: the loss plus lambda
// times the squared norm of its gradients.
func (m gpNet) penalized(theta []float64, lambda float64) float64 {
	l, g := m.grads(theta)
	p := 0.0
	for _, v := range g {
		p += v * v
	}
	return l + lambda*p
}

func f64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// TestGradientPenalty: Grad with createGraph gives differentiable
// gradients, so the gradient of loss + lambda*||dloss/dtheta||^2 through
// Backward matches float64 central differences of that objective, in fp32
// and under fp16 autocast (the AMP examples' gradient-penalty recipe).
func TestGradientPenalty(t *testing.T) {
	d := devtest.Open(t)
	m := gpNet{n: 4, in: 3, hid: 5, out: 2}
	m.x = f64s(tRand(m.n*m.in, 31, 1, f32))
	m.t = f64s(tRand(m.n*m.out, 32, 1, f32))
	shapes := [][]int{{m.hid, m.in}, {m.hid}, {m.out, m.hid}, {m.out}}
	theta := f64s(tRand(m.hid*m.in+m.hid+m.out*m.hid+m.out, 33, 0.8, f32))
	const lambda = 0.5

	want := make([]float64, len(theta))
	for i := range theta {
		const eps = 1e-5
		p, q := append([]float64(nil), theta...), append([]float64(nil), theta...)
		p[i] += eps
		q[i] -= eps
		want[i] = (m.penalized(p, lambda) - m.penalized(q, lambda)) / (2 * eps)
	}

	for _, autocast := range []bool{false, true} {
		var params []*nn.Param
		off := 0
		for i, s := range shapes {
			n := tLen(s)
			v := make([]float32, n)
			for j := range v {
				v[j] = float32(theta[off+j])
			}
			params = append(params, tParam(t, d, []string{"w1", "b1", "w2", "b2"}[i], v, s...))
			off += n
		}
		x := tInput(t, d, tF32(m.x), m.n, m.in)
		target := tInput(t, d, tF32(m.t), m.n, m.out)

		g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(autocast, tensor.Float16)})
		vs := make([]*nn.Var, len(params))
		for i, p := range params {
			vs[i] = g.Param(p)
		}
		h := g.Tanh(g.Linear(g.Input(x), vs[0], vs[1]))
		loss := g.MSELoss(g.Linear(h, vs[2], vs[3]), g.Input(target), nn.Mean)
		grads, err := g.Grad(loss, nil, vs, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range params {
			if v := tRead(t, p.Grad); v[0] != 0 {
				t.Fatalf("Grad touched %s.Grad", p.Name)
			}
		}
		var pen *nn.Var
		for _, gr := range grads {
			s := g.Sum(g.Mul(gr, gr))
			if pen == nil {
				pen = s
			} else {
				pen = g.Add(pen, s)
			}
		}
		if err := g.Add(loss, g.Scale(pen, lambda)).Backward(); err != nil {
			t.Fatal(err)
		}
		var got []float64
		for _, p := range params {
			got = append(got, f64s(tRead(t, p.Grad))...)
		}
		g.Release()
		tol := 2e-3
		if autocast {
			tol = 3e-2 // fp16 matmuls
		}
		scale := tMaxScale(want)
		for i := range want {
			if math.Abs(got[i]-want[i]) > tol*scale[0] {
				t.Errorf("autocast=%v: d(objective)/d(theta[%d]) = %.6g, float64 central differences %.6g", autocast, i, got[i], want[i])
			}
		}
	}
}

// TestGradValues: without createGraph, Grad gives the values Backward puts
// into the parameters' Grad, for parameters and for an intermediate var,
// leaving the Grads alone; an unused input is an error; an op without a
// differentiable rule panics naming it when createGraph is asked for.
func TestGradValues(t *testing.T) {
	d := devtest.Open(t)
	w := tParam(t, d, "w", tRand(12, 41, 1, f32), 4, 3)
	b := tParam(t, d, "b", tRand(4, 42, 1, f32), 4)
	unused := tParam(t, d, "unused", tRand(2, 43, 1, f32), 2)
	x := tInput(t, d, tRand(6, 44, 1, f32), 2, 3)

	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	z := g.Linear(g.Input(x), g.Param(w), g.Param(b))
	loss := g.Sum(g.Sigmoid(z))
	grads, err := g.Grad(loss, nil, []*nn.Var{g.Param(w), z}, false)
	if err != nil {
		t.Fatal(err)
	}
	if v := tRead(t, w.Grad); v[0] != 0 {
		t.Fatal("Grad touched w.Grad")
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	tSameBits(t, "dloss/dw", tRead(t, grads[0].Value()), tRead(t, w.Grad))
	// dloss/dz = sigmoid(z) (1 - sigmoid(z)).
	zv := tRead(t, z.Value())
	for i, v := range tRead(t, grads[1].Value()) {
		s := 1 / (1 + math.Exp(-float64(zv[i])))
		if math.Abs(float64(v)-s*(1-s)) > 1e-6 {
			t.Errorf("dloss/dz[%d] = %g, want %g", i, v, s*(1-s))
		}
	}
	if _, err := g.Grad(loss, nil, []*nn.Var{g.Param(unused)}, false); err == nil || !strings.Contains(err.Error(), "not used") {
		t.Errorf("unused input: %v, want an error saying it is not used", err)
	}
	gl := g.Sum(g.GELUTanh(z))
	msg := tPanics(t, "createGraph through gelu_tanh", func() { g.Grad(gl, nil, []*nn.Var{z}, true) })
	tContains(t, "createGraph through gelu_tanh", msg, "Grad", "tanh form")
	other := nn.NewGraph(d, nn.Options{})
	defer other.Release()
	msg = tPanics(t, "var of another graph", func() { other.Grad(loss, nil, nil, false) })
	tContains(t, "var of another graph", msg, "Grad", "another graph")
}

func tF32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// TestWithNoGrad: ops inside WithNoGrad record nothing and need no
// gradient, under autocast too; a parameter used inside and outside gets
// its gradient only from the use outside.
func TestWithNoGrad(t *testing.T) {
	d := devtest.Open(t)
	w := tParam(t, d, "w", []float32{2}, 1)
	g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16})
	defer g.Release()
	var inside *nn.Var
	g.WithNoGrad(func() {
		inside = g.Mul(g.Param(w), g.Param(w))
	})
	loss := g.Sum(g.Mul(g.Param(w), inside)) // w * const(w^2)
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	if v := tRead(t, w.Grad); v[0] != 4 {
		t.Errorf("gradient %v, want 4 (w^2 a constant)", v[0])
	}
	if _, err := g.Grad(g.Sum(inside), nil, nil, false); err == nil {
		t.Error("Grad of a no-grad result: no error")
	}
}

// TestRequiresGrad: Backward computes the gradient of a RequiresGrad
// input and of an intermediate var (Var.Grad), a parameter's var reads its
// Grad, and an Int32 tensor cannot require a gradient.
func TestRequiresGrad(t *testing.T) {
	d := devtest.Open(t)
	w := tParam(t, d, "w", []float32{3, -1}, 2)
	x := tInput(t, d, []float32{0.5, 2}, 2)
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	xv := g.RequiresGrad(x)
	h := g.Mul(xv, g.Param(w)) // w x
	loss := g.Sum(g.Mul(h, h)) // sum (w x)^2
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	// d/dx = 2 w^2 x, d/dh = 2 h, d/dw = 2 w x^2.
	tSameBits(t, "dx", tRead(t, xv.Grad()), []float32{9, 4})
	tSameBits(t, "dh", tRead(t, h.Grad()), []float32{3, -4})
	tSameBits(t, "dw", tRead(t, g.Param(w).Grad()), []float32{1.5, -8})
	if g.Input(x).Grad() != nil {
		t.Error("a plain input has a gradient")
	}
	ids := tLabels(t, d, 1, 2)
	msg := tPanics(t, "int32", func() { g.RequiresGrad(ids) })
	tContains(t, "int32", msg, "RequiresGrad", "int32")
}

// TestNoGradFreesAtOnce: in a graph without gradients each op leaves only
// its output: its saved state, temporaries and input casts are released
// when it returns, and the results are the bits a graph with gradients
// computes.
func TestNoGradFreesAtOnce(t *testing.T) {
	d := devtest.Open(t)
	w := tParam(t, d, "w", tRand(5*6, 51, 1, f32), 5, 6)
	gamma := tParam(t, d, "gamma", tRand(5, 52, 1, f32), 5)
	beta := tParam(t, d, "beta", tRand(5, 53, 1, f32), 5)
	x := tInput(t, d, tRand(4*6, 54, 1, f32), 4, 6)
	labels := tLabels(t, d, 1, 0, 4, 2)
	run := func(o nn.Options, check func(what string, before int)) []float32 {
		g := nn.NewGraph(d, o)
		defer g.Release()
		live := func() int { return d.Stats().LiveBuffers }
		before := live()
		h := g.Linear(g.Input(x), g.Param(w), nil) // casts x and w under autocast
		check("linear", before)
		before = live()
		n := g.LayerNorm(h, g.Param(gamma), g.Param(beta), 1e-5) // saves stats
		check("layer_norm", before)
		before = live()
		l := g.CrossEntropyLoss(n, labels, nn.Mean) // saves log-probabilities
		check("cross_entropy", before)
		return tRead(t, l.Value())
	}
	for _, autocast := range []bool{false, true} {
		want := run(nn.Options{Autocast: nn.AutocastTo(autocast, tensor.Float16)}, func(string, int) {})
		got := run(nn.Options{Autocast: nn.AutocastTo(autocast, tensor.Float16), NoGrad: true}, func(what string, before int) {
			extra := 1 // the op's output
			if what == "linear" && autocast {
				extra = 2 // and the weight's cast, which the autocast cache keeps
			}
			if n := d.Stats().LiveBuffers - before; n != extra {
				t.Errorf("autocast=%v: %s left %d buffers, want %d", autocast, what, n, extra)
			}
		})
		tSameBits(t, "loss", got, want)
	}
}
