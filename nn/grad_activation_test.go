package nn_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Checks of the composed activations (ops_activation.go) against float64
// host forwards, their gradients against central differences of them, in
// fp32 and under fp16 autocast, as TestMathGradients.

// withZeros sets every fourth value to 0, PyTorch's kink of relu, abs and
// leaky_relu, whose gradients there the ops must give as PyTorch's.
func withZeros(_ int, v []float32) []float32 {
	out := append([]float32(nil), v...)
	for i := 0; i < len(out); i += 4 {
		out[i] = 0
	}
	return out
}

func activationGradCases() []gradCase {
	silu := func(x float64) float64 { return x * ref.Sigmoid64(x) }
	leaky := func(s float64) func(float64) float64 {
		return func(x float64) float64 {
			if x > 0 {
				return x
			}
			return s * x
		}
	}
	elu := func(a float64) func(float64) float64 {
		return func(x float64) float64 {
			if x > 0 {
				return x
			}
			return a * math.Expm1(x)
		}
	}
	clamp := func(lo, hi float64) func(float64) float64 {
		return func(x float64) float64 { return math.Min(math.Max(x, lo), hi) }
	}
	cases := []gradCase{
		{name: "silu", shapes: [][]int{{3, 5}}, k: ref.ExpRoundings, out16: true,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, 4) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.SiLU(in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], silu) }},
		{name: "abs", shapes: [][]int{{3, 5}}, k: 2, out16: true, prep: withZeros,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Abs(in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], math.Abs) }},
		{name: "clamp [-0.3, 0.4]", shapes: [][]int{{4, 5}}, k: 2, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Clamp(in[0], -0.3, 0.4) },
			host: func(in [][]float64) []float64 {
				return mapf(in[0], clamp(float64(float32(-0.3)), float64(float32(0.4))))
			}},
		{name: "clamp [-inf, 0.2]", shapes: [][]int{{3, 5}}, k: 2, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Clamp(in[0], float32(math.Inf(-1)), 0.2) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], clamp(math.Inf(-1), float64(float32(0.2)))) }},
		{name: "clamp [-inf, inf]", shapes: [][]int{{3, 5}}, k: 2, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var {
				return g.Clamp(in[0], float32(math.Inf(-1)), float32(math.Inf(1)))
			},
			host: func(in [][]float64) []float64 { return in[0] }},
	}
	for _, s := range []float32{0.01, 0.2} {
		cases = append(cases, gradCase{name: fmt.Sprintf("leaky_relu %g", s), shapes: [][]int{{3, 5}}, k: 2, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.LeakyReLU(in[0], s) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], leaky(float64(s))) }})
	}
	for _, a := range []float32{1, 0.5} {
		cases = append(cases, gradCase{name: fmt.Sprintf("elu %g", a), shapes: [][]int{{3, 5}}, k: ref.ExpRoundings, out16: true,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, 3) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.ELU(in[0], a) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], elu(float64(a))) }})
	}
	// Maximum and Minimum, broadcasting, with ties: b repeats some of a's
	// values, where each gets half the gradient (the host's central
	// difference says the same).
	ties := func(i int, v []float32) []float32 {
		if i == 1 {
			return []float32{v[0], 0.125, -0.5}
		}
		out := append([]float32(nil), v...)
		out[1], out[5] = 0.125, -0.5 // a[0,1] == b[1], a[1,2] == b[2]
		return out
	}
	for _, m := range []struct {
		name string
		op   func(g *nn.Graph, a, b *nn.Var) *nn.Var
		f    func(a, b float64) float64
	}{{"maximum", (*nn.Graph).Maximum, math.Max}, {"minimum", (*nn.Graph).Minimum, math.Min}} {
		cases = append(cases,
			gradCase{name: m.name + " [2 3],[3] ties", shapes: [][]int{{2, 3}, {3}}, k: 2, out16: true, prep: ties,
				build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return m.op(g, in[0], in[1]) },
				host:  bcHost([]int{2, 3}, []int{3}, m.f)},
			gradCase{name: m.name + " [3 1],[1 4]", shapes: [][]int{{3, 1}, {1, 4}}, k: 2, out16: true,
				build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return m.op(g, in[0], in[1]) },
				host:  bcHost([]int{3, 1}, []int{1, 4}, m.f)},
			gradCase{name: m.name + " same shape", shapes: [][]int{{3, 5}, {3, 5}}, k: 2, out16: true,
				build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return m.op(g, in[0], in[1]) },
				host: func(in [][]float64) []float64 {
					return zipWith(in[0], in[1], m.f)
				}})
	}
	softplus := func(beta, thr float64) func(float64) float64 {
		return func(x float64) float64 {
			if beta*x > thr {
				return x
			}
			return math.Log1p(math.Exp(beta*x)) / beta
		}
	}
	for _, sp := range []struct{ beta, thr, scale float32 }{{1, 20, 3}, {2, 1.5, 2}, {0.5, 20, 4}} {
		// Under autocast softplus runs in fp32 (PyTorch's fp32 list).
		cases = append(cases, gradCase{name: fmt.Sprintf("softplus beta %g threshold %g", sp.beta, sp.thr), shapes: [][]int{{3, 5}}, k: ref.ExpRoundings,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, sp.scale) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Softplus(in[0], sp.beta, sp.thr) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], softplus(float64(sp.beta), float64(sp.thr))) }})
	}
	cases = append(cases, gradCase{name: "mish", shapes: [][]int{{3, 5}}, k: ref.ExpRoundings, out16: true,
		prep:  func(_ int, v []float32) []float32 { return scaled(v, 4) },
		build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Mish(in[0]) },
		host: func(in [][]float64) []float64 {
			return mapf(in[0], func(x float64) float64 { return x * math.Tanh(softplus(1, 20)(x)) })
		}})
	return cases
}

// TestSoftplusMishFar: far out on either side the values and gradients are
// finite and PyTorch's (the linear side exponentiates nothing), and at
// beta*x == threshold softplus is still log1p(e^z)/beta with gradient
// sigmoid(z), as PyTorch's (it is linear only above).
func TestSoftplusMishFar(t *testing.T) {
	d := devtest.Open(t)
	sig := func(z float64) float64 { return 1 / (1 + math.Exp(-z)) }
	for _, c := range []struct {
		name         string
		op           func(g *nn.Graph, x *nn.Var) *nn.Var
		x            []float32
		wantY, wantG []float64
	}{
		{"softplus", func(g *nn.Graph, x *nn.Var) *nn.Var { return g.Softplus(x, 1, 20) },
			[]float32{100, -100, 30000, 0},
			[]float64{100, 0, 30000, math.Ln2},
			[]float64{1, 0, 1, 0.5}},
		{"softplus at the threshold", func(g *nn.Graph, x *nn.Var) *nn.Var { return g.Softplus(x, 2, 2) },
			[]float32{1, 1.0625},
			[]float64{math.Log1p(math.Exp(2)) / 2, 1.0625},
			[]float64{sig(2), 1}},
		{"mish", (*nn.Graph).Mish,
			[]float32{100, -100, 30000, 0},
			[]float64{100, 0, 30000, 0},
			[]float64{1, 0, 1, math.Tanh(math.Ln2)}},
	} {
		for _, dt := range []tensor.DType{f32, f16} {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) {
				p, g, v := actInput(t, d, c.x, dt)
				defer g.Release()
				y := c.op(g, v)
				if err := g.Backward(g.Sum(y), nil); err != nil {
					t.Fatal(err)
				}
				gotY, gotG := tRead(t, y.Value()), tRead(t, p.Grad)
				tol := 2 * ref.Tol(y.DType(), 1)
				for i := range c.x {
					if math.Abs(float64(gotY[i])-c.wantY[i]) > tol*max(1, math.Abs(c.wantY[i])) ||
						math.Abs(float64(gotG[i])-c.wantG[i]) > 2*ref.Tol(dt, 1) {
						t.Errorf("x=%g: y %g grad %g, want %g and %g", c.x[i], gotY[i], gotG[i], c.wantY[i], c.wantG[i])
					}
				}
			})
		}
	}
}

func TestActivationGradients(t *testing.T) {
	d := devtest.Open(t)
	t.Logf("device %s", d.Info().Name)
	for _, c := range activationGradCases() {
		for _, dt := range []tensor.DType{f32, f16} {
			t.Run(fmt.Sprintf("%s/%s", c.name, dt), func(t *testing.T) { checkGradCase(t, d, c, dt) })
		}
	}
}

// TestActivationKinks: the gradients at the kinks, which the host's
// central difference cannot give (it averages the two sides), are
// PyTorch's: clamp passes it at x == min and x == max (min <= x <= max),
// 0 just outside; leaky_relu gives negative_slope at 0, elu alpha, abs 0.
func TestActivationKinks(t *testing.T) {
	d := devtest.Open(t)
	for _, c := range []struct {
		name            string
		op              func(g *nn.Graph, x *nn.Var) *nn.Var
		x, wantY, wantG []float32
	}{
		{"clamp", func(g *nn.Graph, x *nn.Var) *nn.Var { return g.Clamp(x, -0.25, 0.5) },
			[]float32{-0.25, 0.5, -0.25 - 0x1p-10, 0.5 + 0x1p-10, 0, -3, 3, 0.25},
			[]float32{-0.25, 0.5, -0.25, 0.5, 0, -0.25, 0.5, 0.25},
			[]float32{1, 1, 0, 0, 1, 0, 0, 1}},
		{"leaky_relu", func(g *nn.Graph, x *nn.Var) *nn.Var { return g.LeakyReLU(x, 0.25) },
			[]float32{0, float32(math.Copysign(0, -1)), 2, -2},
			[]float32{0, 0, 2, -0.5},
			[]float32{0.25, 0.25, 1, 0.25}},
		{"elu", func(g *nn.Graph, x *nn.Var) *nn.Var { return g.ELU(x, 0.5) },
			[]float32{0, 2},
			[]float32{0, 2},
			[]float32{0.5, 1}},
		{"abs", (*nn.Graph).Abs,
			[]float32{0, -2, 2},
			[]float32{0, 2, 2},
			[]float32{0, -1, 1}},
	} {
		for _, dt := range []tensor.DType{f32, f16} {
			t.Run(c.name+"/"+dt.String(), func(t *testing.T) {
				p, g, v := actInput(t, d, c.x, dt)
				defer g.Release()
				y := c.op(g, v)
				if y.DType() != dt {
					t.Fatalf("output is %s, want %s", y.DType(), dt)
				}
				if err := g.Backward(g.Sum(y), nil); err != nil {
					t.Fatal(err)
				}
				gotY, gotG := tRead(t, y.Value()), tRead(t, p.Grad)
				for i := range c.x {
					if gotY[i] != c.wantY[i] || gotG[i] != c.wantG[i] {
						t.Errorf("x=%g: y %g grad %g, want %g and %g", c.x[i], gotY[i], gotG[i], c.wantY[i], c.wantG[i])
					}
				}
			})
		}
	}
}

// TestClampBadBounds: min > max and a NaN bound are refused.
func TestClampBadBounds(t *testing.T) {
	d := devtest.Open(t)
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	x := g.Input(tensor.Full(d, f32, 1, 3))
	defer x.Value().Release()
	for _, b := range [][2]float32{{1, 0}, {float32(math.NaN()), 1}, {0, float32(math.NaN())}} {
		func() {
			defer func() {
				var ue *tensor.UsageError
				if e, _ := recover().(error); !errors.As(e, &ue) {
					t.Errorf("Clamp(%g, %g): recovered %v, want a *tensor.UsageError", b[0], b[1], e)
				}
			}()
			g.Clamp(x, b[0], b[1])
		}()
	}
}

// TestClampNaN: a NaN input stays NaN through Clamp, in fp32 and fp16, as
// in PyTorch, and the values around it are clamped: a clamp must not hide
// an overflow from the scaler.
func TestClampNaN(t *testing.T) {
	d := devtest.Open(t)
	nan := float32(math.NaN())
	in := []float32{nan, -5, 0.5, 5, float32(math.Inf(1)), float32(math.Inf(-1))}
	want := []float32{nan, -1, 0.5, 2, 2, -1}
	for _, dt := range []tensor.DType{f32, tensor.Float16} {
		g := nn.NewGraph(d, nn.Options{})
		xt := tensor.Cast(tensor.FromFloat32(d, in, len(in)), dt)
		got, err := tensor.Cast(g.Clamp(g.Input(xt), -1, 2).Value(), f32).Float32s()
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if w := want[i]; (math.IsNaN(float64(w)) != math.IsNaN(float64(got[i]))) || (!math.IsNaN(float64(w)) && got[i] != w) {
				t.Errorf("%v: Clamp(%g) = %g, want %g", dt, in[i], got[i], w)
			}
		}
		g.Release()
		xt.Release()
	}
}

// TestActivationsNoGrad: the ops run without gradients, keeping only
// their results, and give the values they give with gradients.
func TestActivationsNoGrad(t *testing.T) {
	d := devtest.Open(t)
	vals := tRand(12, 3, 2, f32)
	ops := map[string]func(g *nn.Graph, x *nn.Var) *nn.Var{
		"SiLU":      (*nn.Graph).SiLU,
		"LeakyReLU": func(g *nn.Graph, x *nn.Var) *nn.Var { return g.LeakyReLU(x, 0.1) },
		"Abs":       (*nn.Graph).Abs,
		"ELU":       func(g *nn.Graph, x *nn.Var) *nn.Var { return g.ELU(x, 1) },
		"Clamp":     func(g *nn.Graph, x *nn.Var) *nn.Var { return g.Clamp(x, -0.5, 0.5) },
		"Maximum":   func(g *nn.Graph, x *nn.Var) *nn.Var { return g.Maximum(x, g.Scale(x, -1)) },
		"Minimum":   func(g *nn.Graph, x *nn.Var) *nn.Var { return g.Minimum(x, g.Scale(x, -1)) },
		"Softplus":  func(g *nn.Graph, x *nn.Var) *nn.Var { return g.Softplus(x, 2, 1) },
		"Mish":      (*nn.Graph).Mish,
	}
	for name, op := range ops {
		t.Run(name, func(t *testing.T) {
			p := tParam(t, d, "x", vals, 3, 4)
			run := func(noGrad bool) []float32 {
				g := nn.NewGraph(d, nn.Options{})
				defer g.Release()
				var out []float32
				f := func() { out = tRead(t, op(g, g.Param(p)).Value()) }
				if noGrad {
					g.WithNoGrad(f)
				} else {
					f()
				}
				return out
			}
			want, got := run(false), run(true)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("element %d: %g without gradients, %g with", i, got[i], want[i])
				}
			}
		})
	}
}

// TestActivationDoubleRules: SiLU, LeakyReLU, Abs and ELU are composed of
// ops with differentiable backward rules, so Grad with createGraph goes
// through them, as TestDoubleRules checks (values kept 0.2 from the kinks).
func TestActivationDoubleRules(t *testing.T) {
	d := devtest.Open(t)
	shapes := [][]int{{2, 3}}
	for ci, c := range []struct {
		name string
		op   func(g *nn.Graph, x *nn.Var) *nn.Var
	}{
		{"silu", (*nn.Graph).SiLU},
		{"leaky_relu", func(g *nn.Graph, x *nn.Var) *nn.Var { return g.LeakyReLU(x, 0.1) }},
		{"abs", (*nn.Graph).Abs},
		{"elu", func(g *nn.Graph, x *nn.Var) *nn.Var { return g.ELU(x, 0.7) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			loss := func(g *nn.Graph, p []*nn.Var) *nn.Var { return g.Sum(g.Mul(c.op(g, p[0]), p[0])) }
			theta := [][]float32{tAway(tRand(6, uint64(300+ci), 0.9, f32), 0.2)}
			cs := [][]float32{tRand(6, uint64(350+ci), 1, f32)}
			got := doubleGrad(t, d, shapes, theta, cs, loss)
			for j := range theta[0] {
				const eps = 1e-2
				at := func(delta float32) float64 {
					th := cloneAll(theta)
					th[0][j] += delta
					return penalty(t, d, shapes, th, cs, loss)
				}
				want := (at(eps) - at(-eps)) / (2 * eps)
				if math.Abs(float64(got[0][j])-want) > 2e-2*(1+math.Abs(want)) {
					t.Errorf("x[%d]: double backward %.5g, central differences %.5g", j, got[0][j], want)
				}
			}
		})
	}
}

// actInput is a parameter of the values x and a graph, under fp16 autocast
// for dt Float16, whose var of it is x in dtype dt.
func actInput(t *testing.T, d *vk.Device, x []float32, dt tensor.DType) (*nn.Param, *nn.Graph, *nn.Var) {
	t.Helper()
	p := tParam(t, d, "x", x, len(x))
	g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(dt == f16, tensor.Float16)})
	v := g.Param(p)
	if dt == f16 {
		v = g.Cast(v, f16)
	}
	return p, g, v
}
