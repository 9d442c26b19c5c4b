package nn_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// Gradient checks of the ops of nn/conv.go, as grad_test.go checks the
// others: forward and every input's gradient against float64 central
// differences, in fp32 and under fp16 autocast.

// distinct replaces v by distinct multiples of 1/64 in a random order,
// exact in fp16: no two inputs of a max tie, even after the finite
// differences' steps.
func distinct(_ int, v []float32) []float32 {
	out := make([]float32, len(v))
	for i, j := range rand.New(rand.NewPCG(uint64(len(v)), 3)).Perm(len(v)) {
		out[i] = float32(j-len(v)/2) / 64
	}
	return out
}

func convGradCase(name string, c ref.Conv, bias bool) gradCase {
	o := tensor.Conv2dOpts{Stride: [2]int{c.SH, c.SW}, Padding: [2]int{c.PH, c.PW}, Dilation: [2]int{c.DH, c.DW}, Groups: c.Groups}
	shapes := [][]int{{c.N, c.Cin, c.H, c.W}, {c.Cout, c.Cin / c.Groups, c.KH, c.KW}}
	if bias {
		shapes = append(shapes, []int{c.Cout})
	}
	ho, wo := c.Out()
	return gradCase{
		name: name, shapes: shapes, k: 4 * (c.Cin/c.Groups*c.KH*c.KW + c.N*ho*wo), lower: true, out16: true,
		build: func(g *nn.Graph, in []*nn.Var) *nn.Var {
			var b *nn.Var
			if bias {
				b = in[2]
			}
			return g.Conv2d(in[0], in[1], b, o)
		},
		host: func(in [][]float64) []float64 {
			var b []float64
			if bias {
				b = in[2]
			}
			y, _ := c.Forward64(in[0], in[1], b)
			return y
		},
	}
}

func poolGradCase(name string, p ref.Pool, shape []int, build func(g *nn.Graph, x *nn.Var) *nn.Var, max bool) gradCase {
	c := gradCase{
		name: name, shapes: [][]int{shape}, k: 16, out16: true,
		build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return build(g, in[0]) },
		host: func(in [][]float64) []float64 {
			if max {
				y, _ := p.Max64(in[0])
				return y
			}
			return p.Avg64(in[0])
		},
	}
	if max {
		c.prep = distinct
	}
	return c
}

func convGradCases() []gradCase {
	cases := []gradCase{
		convGradCase("conv2d", ref.Conv{N: 2, Cin: 2, H: 5, W: 4, Cout: 3, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1}, true),
		convGradCase("conv2d stride padding dilation", ref.Conv{N: 2, Cin: 2, H: 6, W: 7, Cout: 2, KH: 3, KW: 2, SH: 2, SW: 1, PH: 1, PW: 2, DH: 1, DW: 2, Groups: 1}, true),
		convGradCase("conv2d groups without bias", ref.Conv{N: 1, Cin: 4, H: 4, W: 4, Cout: 6, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 2}, false),
		convGradCase("conv2d depthwise", ref.Conv{N: 2, Cin: 3, H: 5, W: 5, Cout: 3, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 3}, true),
		poolGradCase("max_pool2d", ref.Pool{Planes: 4, H: 6, W: 6, KH: 2, KW: 2, SH: 2, SW: 2}, []int{2, 2, 6, 6},
			func(g *nn.Graph, x *nn.Var) *nn.Var { return g.MaxPool2d(x, 2, 0) }, true),
		poolGradCase("max_pool2d overlapping padded", ref.Pool{Planes: 3, H: 5, W: 6, KH: 3, KW: 3, SH: 2, SW: 1, PH: 1, PW: 1}, []int{3, 5, 6},
			func(g *nn.Graph, x *nn.Var) *nn.Var {
				return nn.MaxPool2d{Kernel: [2]int{3, 3}, Stride: [2]int{2, 1}, Padding: [2]int{1, 1}}.Forward(g, x)
			}, true),
		poolGradCase("avg_pool2d", ref.Pool{Planes: 4, H: 5, W: 7, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1}, []int{2, 2, 5, 7},
			func(g *nn.Graph, x *nn.Var) *nn.Var {
				return g.AvgPool2dWindow(x, [2]int{3, 3}, [2]int{2, 2}, [2]int{1, 1})
			}, false),
		poolGradCase("adaptive_avg_pool2d", ref.Pool{Planes: 4, H: 7, W: 5, Ho: 3, Wo: 2, Adaptive: true}, []int{2, 2, 7, 5},
			func(g *nn.Graph, x *nn.Var) *nn.Var { return nn.AdaptiveAvgPool2d{H: 3, W: 2}.Forward(g, x) }, false),
		{
			name: "reshape", shapes: [][]int{{2, 3, 4}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Reshape(in[0], 4, -1) },
			host:  func(in [][]float64) []float64 { return in[0] },
		},
		{
			name: "flatten", shapes: [][]int{{2, 3, 2, 2}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return nn.Flatten{}.Forward(g, in[0]) },
			host:  func(in [][]float64) []float64 { return in[0] },
		},
	}
	// The MNIST example's shape of network, small: conv, relu, max pool,
	// flatten, linear. In fp32 only: in fp16 the conv's rounded outputs
	// tie in the max pool where the float64 host's do not.
	c := ref.Conv{N: 2, Cin: 1, H: 6, W: 6, Cout: 2, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1}
	p := ref.Pool{Planes: 4, H: 4, W: 4, KH: 2, KW: 2, SH: 2, SW: 2}
	cases = append(cases, gradCase{
		name: "conv relu pool flatten linear", shapes: [][]int{{2, 1, 6, 6}, {2, 1, 3, 3}, {2}, {3, 8}}, k: 64, lower: true, out16: true, noHalf: true,
		prep: func(i int, v []float32) []float32 {
			if i == 0 {
				return distinct(i, v)
			}
			return v
		},
		build: func(g *nn.Graph, in []*nn.Var) *nn.Var {
			h := g.MaxPool2d(g.ReLU(g.Conv2d(in[0], in[1], in[2], tensor.Conv2dOpts{})), 2, 2)
			return g.Linear(g.Flatten(h, 1), in[3], nil)
		},
		host: func(in [][]float64) []float64 {
			y, _ := c.Forward64(in[0], in[1], in[2])
			h, _ := p.Max64(mapf(y, func(x float64) float64 { return max(x, 0) }))
			return hostLinear(h, in[3], nil, 2, 8, 3)
		},
	})
	return cases
}

func TestConvGradients(t *testing.T) {
	d := devtest.Open(t)
	for _, c := range convGradCases() {
		for _, dt := range []tensor.DType{f32, f16} {
			if dt == f16 && c.noHalf {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", c.name, dt), func(t *testing.T) { checkGradCase(t, d, c, dt) })
		}
	}
}
