package nn_test

import (
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestDoubleRules checks every differentiable backward rule: for a loss L
// of parameters p, and a fixed c, the gradient of F = sum(c * dL/dp) that
// Backward gives through Grad's recorded gradients must match central
// differences of F, whose dL/dp comes from Grad without createGraph.
func TestDoubleRules(t *testing.T) {
	d := devtest.Open(t)
	labels := tLabels(t, d, 2, 0)
	cases := []struct {
		name   string
		shapes [][]int
		loss   func(g *nn.Graph, p []*nn.Var) *nn.Var
	}{
		{"exp", [][]int{{2, 3}}, func(g *nn.Graph, p []*nn.Var) *nn.Var { return g.Sum(g.Exp(p[0])) }},
		{"gelu", [][]int{{2, 3}}, func(g *nn.Graph, p []*nn.Var) *nn.Var { return g.Sum(g.Mul(g.GELU(p[0]), p[0])) }},
		{"log sqrt rsqrt", [][]int{{2, 3}}, func(g *nn.Graph, p []*nn.Var) *nn.Var {
			x := g.Add(g.Mul(p[0], p[0]), g.Input(tensor.Full(d, tensor.Float32, 1, 1)))
			return g.Sum(g.Add(g.Log(x), g.Add(g.Sqrt(x), g.Rsqrt(x))))
		}},
		{"silu", [][]int{{2, 3}}, func(g *nn.Graph, p []*nn.Var) *nn.Var { return g.Sum(g.Mul(g.SiLU(p[0]), p[0])) }},
		{"mish", [][]int{{2, 3}}, func(g *nn.Graph, p []*nn.Var) *nn.Var { return g.Sum(g.Mul(g.Mish(p[0]), p[0])) }},
		{"sigmoid pow neg", [][]int{{2, 3}}, func(g *nn.Graph, p []*nn.Var) *nn.Var {
			return g.Sum(g.Neg(g.Pow(g.Sigmoid(p[0]), 3)))
		}},
		{"div mul broadcast", [][]int{{2, 3}, {3}}, func(g *nn.Graph, p []*nn.Var) *nn.Var {
			den := g.Add(g.Mul(p[1], p[1]), g.Input(tensor.Full(d, tensor.Float32, 2, 1)))
			return g.Sum(g.Mul(g.Div(p[0], den), p[0]))
		}},
		{"matmul batched", [][]int{{2, 2, 3}, {3, 2}}, func(g *nn.Graph, p []*nn.Var) *nn.Var {
			y := g.MatMul(p[0], p[1], false, false)
			return g.Sum(g.Mul(y, y))
		}},
		{"softmax sum_dim mean_dim", [][]int{{2, 3}}, func(g *nn.Graph, p []*nn.Var) *nn.Var {
			s := g.Softmax(g.Scale(p[0], 2), 0)
			return g.Add(g.Sum(g.Mul(g.SumAxes(s, []int{1}, true), p[0])), g.Sum(g.MeanAxes(g.Mul(p[0], p[0]), []int{0}, false)))
		}},
		{"log_softmax permute reshape", [][]int{{2, 3}}, func(g *nn.Graph, p []*nn.Var) *nn.Var {
			ls := g.LogSoftmax(g.Reshape(g.Permute(g.Mul(p[0], p[0]), 1, 0), 2, 3), -1)
			return g.Sum(g.Mul(ls, p[0]))
		}},
		{"cross_entropy relu add_bias", [][]int{{2, 3}, {3}}, func(g *nn.Graph, p []*nn.Var) *nn.Var {
			h := g.AddBias(g.Mul(p[0], g.ReLU(p[0])), p[1])
			return g.CrossEntropyLoss(h, labels, nn.Mean)
		}},
		{"cumsum", [][]int{{2, 3}}, func(g *nn.Graph, p []*nn.Var) *nn.Var {
			return g.Sum(g.Mul(g.CumSum(g.Mul(p[0], p[0]), -1), g.CumSum(p[0], 0)))
		}},
		{"mse linear tanh", [][]int{{2, 3}, {2, 3}, {2}}, func(g *nn.Graph, p []*nn.Var) *nn.Var {
			y := g.Linear(p[0], p[1], p[2])
			return g.MSELoss(g.Tanh(y), g.Input(tensor.Full(d, tensor.Float32, 0.25, 2, 2)), nn.Sum)
		}},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var theta [][]float32
			var cs [][]float32
			for i, s := range c.shapes {
				theta = append(theta, tRand(tLen(s), uint64(100*ci+i), 0.9, f32))
				cs = append(cs, tRand(tLen(s), uint64(100*ci+50+i), 1, f32))
			}
			got := doubleGrad(t, d, c.shapes, theta, cs, c.loss)
			for i := range theta {
				for j := range theta[i] {
					const eps = 1e-2
					at := func(delta float32) float64 {
						th := cloneAll(theta)
						th[i][j] += delta
						return penalty(t, d, c.shapes, th, cs, c.loss)
					}
					want := (at(eps) - at(-eps)) / (2 * eps)
					if math.Abs(float64(got[i][j])-want) > 2e-2*(1+math.Abs(want)) {
						t.Errorf("param %d[%d]: double backward %.5g, central differences %.5g", i, j, got[i][j], want)
					}
				}
			}
		})
	}
}

func cloneAll(v [][]float32) [][]float32 {
	out := make([][]float32, len(v))
	for i := range v {
		out[i] = append([]float32(nil), v[i]...)
	}
	return out
}

// graphOf makes params of values theta and their vars in a new graph.
func graphOf(t *testing.T, d *vk.Device, shapes [][]int, theta [][]float32) (*nn.Graph, []*nn.Param, []*nn.Var) {
	g := nn.NewGraph(d, nn.Options{})
	var ps []*nn.Param
	var vs []*nn.Var
	for i, s := range shapes {
		p := tParam(t, d, "p", theta[i], s...)
		ps = append(ps, p)
		vs = append(vs, g.Param(p))
	}
	return g, ps, vs
}

// penalty is F = sum(c * dL/dp) at theta, from first derivatives only.
func penalty(t *testing.T, d *vk.Device, shapes [][]int, theta, cs [][]float32, loss func(*nn.Graph, []*nn.Var) *nn.Var) float64 {
	g, _, vs := graphOf(t, d, shapes, theta)
	defer g.Release()
	grads, err := g.Grad(loss(g, vs), nil, vs, false)
	if err != nil {
		t.Fatal(err)
	}
	f := 0.0
	for i, gr := range grads {
		for j, v := range tRead(t, gr.Value()) {
			f += float64(v) * float64(cs[i][j])
		}
	}
	return f
}

// doubleGrad is dF/dp through Grad with createGraph and Backward.
func doubleGrad(t *testing.T, d *vk.Device, shapes [][]int, theta, cs [][]float32, loss func(*nn.Graph, []*nn.Var) *nn.Var) [][]float32 {
	g, ps, vs := graphOf(t, d, shapes, theta)
	defer g.Release()
	grads, err := g.Grad(loss(g, vs), nil, vs, true)
	if err != nil {
		t.Fatal(err)
	}
	var f *nn.Var
	for i, gr := range grads {
		s := g.Sum(g.Mul(gr, g.Input(tInput(t, d, cs[i], shapes[i]...))))
		if f == nil {
			f = s
		} else {
			f = g.Add(f, s)
		}
	}
	if err := f.Backward(); err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(ps))
	for i, p := range ps {
		out[i] = tRead(t, p.Grad)
	}
	return out
}
