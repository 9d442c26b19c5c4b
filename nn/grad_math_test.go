package nn_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Gradient checks of the math ops (ops_math.go) and of broadcasting Add,
// Sub and Mul, as TestGradients does for the others.

// bc64 returns x, of shape in, broadcast to shape out.
func bc64(x []float64, in, out []int) []float64 {
	idx := ref.BroadcastIndex(in, out)
	r := make([]float64, len(idx))
	for i, j := range idx {
		r[i] = x[j]
	}
	return r
}

// bcHost is the host forward of a broadcasting binary op.
func bcHost(as, bs []int, f func(a, b float64) float64) func(in [][]float64) []float64 {
	out, _ := tensor.BroadcastShape(as, bs)
	return func(in [][]float64) []float64 { return zipWith(bc64(in[0], as, out), bc64(in[1], bs, out), f) }
}

// reduce64 reduces x, of shape, over axes (nil: all) with f from init.
func reduce64(x []float64, shape, axes []int, init float64, f func(acc, v float64) float64) []float64 {
	kept := append([]int(nil), shape...)
	for i := range kept {
		if len(axes) == 0 {
			kept[i] = 1
		}
	}
	for _, a := range axes {
		kept[(a+len(shape))%len(shape)] = 1
	}
	n := 1
	for _, s := range kept {
		n *= s
	}
	r := make([]float64, n)
	for i := range r {
		r[i] = init
	}
	for i, j := range ref.BroadcastIndex(kept, shape) {
		r[j] = f(r[j], x[i])
	}
	return r
}

// cum64 is the inclusive prefix sums of x, of shape, along axis.
func cum64(x []float64, shape []int, axis int) []float64 {
	ax := (axis + len(shape)) % len(shape)
	inner := 1
	for _, s := range shape[ax+1:] {
		inner *= s
	}
	k := shape[ax]
	r := append([]float64(nil), x...)
	for e := range r {
		if (e/inner)%k > 0 {
			r[e] += r[e-inner]
		}
	}
	return r
}

// positive maps values in [-1, 1) to [0.25, 1.25).
func positive(_ int, v []float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(math.Abs(float64(x))) + 0.25
	}
	return out
}

func mathGradCases(t *testing.T, d *vk.Device) []gradCase {
	add := func(a, b float64) float64 { return a + b }
	cases := []gradCase{
		{name: "add [2 1 3]+[4 3]", shapes: [][]int{{2, 1, 3}, {4, 3}}, k: 4, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Add(in[0], in[1]) },
			host:  bcHost([]int{2, 1, 3}, []int{4, 3}, add)},
		{name: "add scalar", shapes: [][]int{{2, 3}, {1}}, k: 6, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Add(in[0], in[1]) },
			host:  bcHost([]int{2, 3}, []int{1}, add)},
		{name: "sub [5]-[2 3 5]", shapes: [][]int{{5}, {2, 3, 5}}, k: 6, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Sub(in[0], in[1]) },
			host:  bcHost([]int{5}, []int{2, 3, 5}, func(a, b float64) float64 { return a - b })},
		{name: "mul [3 1]*[1 4]", shapes: [][]int{{3, 1}, {1, 4}}, k: 8, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Mul(in[0], in[1]) },
			host:  bcHost([]int{3, 1}, []int{1, 4}, func(a, b float64) float64 { return a * b })},
		{name: "div [2 3]/[3]", shapes: [][]int{{2, 3}, {3}}, k: 8, out16: true,
			prep: func(i int, v []float32) []float32 {
				if i == 1 {
					return tAway(v, 0.5)
				}
				return v
			},
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Div(in[0], in[1]) },
			host:  bcHost([]int{2, 3}, []int{3}, func(a, b float64) float64 { return a / b })},
		{name: "neg", shapes: [][]int{{3, 5}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Neg(in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], func(x float64) float64 { return -x }) }},
		{name: "log", shapes: [][]int{{3, 5}}, k: 8, prep: positive,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Log(in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], math.Log) }},
		{name: "sqrt", shapes: [][]int{{3, 5}}, k: 4, out16: true, prep: positive,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Sqrt(in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], math.Sqrt) }},
		{name: "rsqrt", shapes: [][]int{{3, 5}}, k: 8, prep: positive,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Rsqrt(in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], ref.Rsqrt64) }},
		{name: "tanh", shapes: [][]int{{3, 5}}, k: ref.ExpRoundings, out16: true,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, 2) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Tanh(in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], math.Tanh) }},
		{name: "sigmoid", shapes: [][]int{{3, 5}}, k: ref.ExpRoundings, out16: true,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, 3) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Sigmoid(in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], ref.Sigmoid64) }},
	}
	for _, p := range []float32{2, 3, 2.5, -1.5, 0} {
		prep := positive
		if p == 2 || p == 3 {
			prep = nil
		}
		cases = append(cases, gradCase{name: fmt.Sprintf("pow %g", p), shapes: [][]int{{3, 5}}, k: ref.ExpRoundings, prep: prep,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Pow(in[0], p) },
			host: func(in [][]float64) []float64 {
				return mapf(in[0], func(x float64) float64 { return ref.Pow64(x, float64(p)) })
			}})
	}
	condV := []int32{0, 7}
	cond := tensor.FromInt32(d, condV, 2, 1)
	t.Cleanup(cond.Release)
	maskV := []int32{1, 0, 1}
	mask := tensor.FromInt32(d, maskV, 3)
	t.Cleanup(mask.Release)
	cases = append(cases,
		gradCase{name: "where", shapes: [][]int{{2, 3}, {3}}, k: 4, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Where(cond, in[0], in[1]) },
			host: func(in [][]float64) []float64 {
				y := make([]float64, 6)
				for i := range y {
					y[i] = in[1][i%3]
					if condV[i/3] != 0 {
						y[i] = in[0][i]
					}
				}
				return y
			}},
		gradCase{name: "masked_fill", shapes: [][]int{{2, 3}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.MaskedFill(in[0], mask, -0.5) },
			host: func(in [][]float64) []float64 {
				y := append([]float64(nil), in[0]...)
				for i := range y {
					if maskV[i%3] != 0 {
						y[i] = -0.5
					}
				}
				return y
			}},
	)
	shape := []int{2, 3, 4}
	sum := func(a, v float64) float64 { return a + v }
	for _, c := range []struct {
		op      string
		axes    []int
		keepdim bool
	}{{"sum_dim", []int{0, 2}, false}, {"sum_dim", nil, true}, {"mean_dim", []int{-1}, true}, {"mean_dim", []int{1, 0}, false},
		{"amax", []int{1}, false}, {"amax", []int{0, 2}, true}, {"amin", nil, false}, {"amin", []int{-1}, true}} {
		c := c
		build := map[string]func(*nn.Graph, *nn.Var, []int, bool) *nn.Var{
			"sum_dim": (*nn.Graph).SumAxes, "mean_dim": (*nn.Graph).MeanAxes, "amax": (*nn.Graph).MaxAxes, "amin": (*nn.Graph).MinAxes}[c.op]
		gc := gradCase{name: fmt.Sprintf("%s %v keepdim=%v", c.op, c.axes, c.keepdim), shapes: [][]int{shape}, k: 24,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return build(g, in[0], c.axes, c.keepdim) }}
		switch c.op {
		case "sum_dim", "mean_dim":
			gc.host = func(in [][]float64) []float64 {
				r := reduce64(in[0], shape, c.axes, 0, sum)
				if c.op == "mean_dim" {
					k := float64(len(in[0]) / len(r))
					r = mapf(r, func(s float64) float64 { return s / k })
				}
				return r
			}
		default:
			init, f := math.Inf(-1), math.Max
			if c.op == "amin" {
				init, f = math.Inf(1), math.Min
			}
			gc.host = func(in [][]float64) []float64 { return reduce64(in[0], shape, c.axes, init, f) }
			// Two-way ties: central differences give each half, as the
			// even split does.
			gc.prep = func(_ int, v []float32) []float32 {
				v[5] = v[1]
				v[23] = v[0]
				return v
			}
		}
		cases = append(cases, gc)
	}
	// cumsum along each axis, negative too; its gradient sums dy from the
	// other end.
	for _, axis := range []int{0, 1, -1} {
		cases = append(cases, gradCase{name: fmt.Sprintf("cumsum %d", axis), shapes: [][]int{shape}, k: 4,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.CumSum(in[0], axis) },
			host:  func(in [][]float64) []float64 { return cum64(in[0], shape, axis) }})
	}
	// Ties for certain: every element of a row is equal to another.
	cases = append(cases, gradCase{name: "amax ties", shapes: [][]int{{2, 4}}, k: 4,
		prep: func(_ int, v []float32) []float32 {
			return []float32{0.5, 0.5, -1, 0.25, -0.75, 0.125, -0.75, -0.75 + 0x1p-6}
		},
		build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.MaxAxes(in[0], []int{1}, false) },
		host:  func(in [][]float64) []float64 { return reduce64(in[0], []int{2, 4}, []int{1}, math.Inf(-1), math.Max) }})
	return cases
}

func TestMathGradients(t *testing.T) {
	d := devtest.Open(t)
	for _, c := range mathGradCases(t, d) {
		for _, dt := range []tensor.DType{f32, f16} {
			t.Run(fmt.Sprintf("%s/%s", c.name, dt), func(t *testing.T) { checkGradCase(t, d, c, dt) })
		}
	}
}
