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

// Gradient checks: every backward rule of nn/rules.go against central finite
// differences of a float64 host implementation of the forward pass. Each
// case's output y is reduced to the loss sum(y * w) with fixed weights w
// (exact in fp16, so the upstream gradient is w in every dtype), and the
// gradients the device accumulates into the parameters are compared with
// d loss / d input computed on the host.

// gradCase is one op under test. Every input is a parameter, so that every
// input's gradient is checked.
type gradCase struct {
	name   string
	shapes [][]int
	// prep adjusts the random values of input i (nil keeps them).
	prep  func(i int, v []float32) []float32
	build func(g *nn.Graph, in []*nn.Var) *nn.Var
	host  func(in [][]float64) []float64
	// k is the rounding count passed to ref.Tol: the reduction length behind
	// each gradient element, with slack for the norm-wise comparison.
	k int
	// In the fp16 run under autocast, lower ops (matmul, linear) get the fp32
	// parameters and cast them themselves; the others get fp16 casts of the
	// parameters. out16 says the op's output is then fp16.
	lower, out16 bool
	noHalf       bool
}

func gradCases(t *testing.T, d *vk.Device) []gradCase {
	const m, k, n = 3, 5, 4
	var cases []gradCase
	cases = append(cases, gradCase{
		name: "cast", shapes: [][]int{{3, 4}}, k: 1,
		prep:  func(_ int, v []float32) []float32 { return ref.RoundAll(v, f16) }, // exact in fp16
		build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Cast(g.Cast(in[0], f16), f32) },
		host:  func(in [][]float64) []float64 { return in[0] },
	})
	for _, tr := range [][2]bool{{false, false}, {false, true}, {true, false}, {true, true}} {
		tA, tB := tr[0], tr[1]
		a, b := []int{m, k}, []int{k, n}
		if tA {
			a = []int{k, m}
		}
		if tB {
			b = []int{n, k}
		}
		cases = append(cases, gradCase{
			name: fmt.Sprintf("matmul transA=%v transB=%v", tA, tB), shapes: [][]int{a, b}, k: 4*k + 4, lower: true, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.MatMul(in[0], in[1], tA, tB) },
			host:  func(in [][]float64) []float64 { return hostMatMul(in[0], in[1], m, k, n, tA, tB) },
		})
	}
	cases = append(cases,
		gradCase{
			name: "linear with bias", shapes: [][]int{{m, k}, {n, k}, {n}}, k: 4*k + 4, lower: true, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Linear(in[0], in[1], in[2]) },
			host:  func(in [][]float64) []float64 { return hostLinear(in[0], in[1], in[2], m, k, n) },
		},
		gradCase{
			name: "linear without bias", shapes: [][]int{{m, k}, {n, k}}, k: 4*k + 4, lower: true, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Linear(in[0], in[1], nil) },
			host:  func(in [][]float64) []float64 { return hostLinear(in[0], in[1], nil, m, k, n) },
		},
		gradCase{
			name: "add", shapes: [][]int{{3, 5}, {3, 5}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Add(in[0], in[1]) },
			host: func(in [][]float64) []float64 {
				return zipWith(in[0], in[1], func(a, b float64) float64 { return a + b })
			},
		},
		gradCase{
			name: "add of a var to itself", shapes: [][]int{{7}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Add(in[0], in[0]) },
			host: func(in [][]float64) []float64 {
				return zipWith(in[0], in[0], func(a, b float64) float64 { return a + b })
			},
		},
		gradCase{
			name: "sub", shapes: [][]int{{3, 5}, {3, 5}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Sub(in[0], in[1]) },
			host: func(in [][]float64) []float64 {
				return zipWith(in[0], in[1], func(a, b float64) float64 { return a - b })
			},
		},
		gradCase{
			name: "mul", shapes: [][]int{{3, 5}, {3, 5}}, k: 2, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Mul(in[0], in[1]) },
			host: func(in [][]float64) []float64 {
				return zipWith(in[0], in[1], func(a, b float64) float64 { return a * b })
			},
		},
		gradCase{
			name: "add_bias", shapes: [][]int{{2, 3, 4}, {4}}, k: 4 * 6, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.AddBias(in[0], in[1]) },
			host: func(in [][]float64) []float64 {
				y := make([]float64, len(in[0]))
				for i := range y {
					y[i] = in[0][i] + in[1][i%4]
				}
				return y
			},
		},
		gradCase{
			name: "scale", shapes: [][]int{{3, 5}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Scale(in[0], -1.5) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], func(x float64) float64 { return -1.5 * x }) },
		},
		gradCase{
			name: "relu", shapes: [][]int{{3, 5}}, k: 1, out16: true,
			prep:  func(_ int, v []float32) []float32 { return tAway(v, 0.05) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.ReLU(in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], func(x float64) float64 { return max(x, 0) }) },
		},
		gradCase{
			name: "gelu", shapes: [][]int{{3, 5}}, k: ref.ExpRoundings, out16: true,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, 3) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.GELU(in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], ref.Gelu64) },
		},
		gradCase{
			name: "gelu_tanh", shapes: [][]int{{3, 5}}, k: ref.ExpRoundings, out16: true,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, 3) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.GELUTanh(in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], ref.GeluTanh64) },
		},
		gradCase{
			name: "gelu_module_tanh", shapes: [][]int{{3, 5}}, k: ref.ExpRoundings, out16: true,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, 3) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return nn.GELU{Approximate: "tanh"}.Forward(g, in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], ref.GeluTanh64) },
		},
		gradCase{
			name: "exp", shapes: [][]int{{3, 5}}, k: ref.ExpRoundings,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Exp(in[0]) },
			host:  func(in [][]float64) []float64 { return mapf(in[0], math.Exp) },
		},
		gradCase{
			name: "sum", shapes: [][]int{{3, 5}}, k: 1,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Sum(in[0]) },
			host:  func(in [][]float64) []float64 { return []float64{sum(in[0])} },
		},
		gradCase{
			name: "mean", shapes: [][]int{{3, 5}}, k: 2,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Mean(in[0]) },
			host:  func(in [][]float64) []float64 { return []float64{sum(in[0]) / float64(len(in[0]))} },
		},
	)
	// Dropout's mask is read from the device's forward output (dropped
	// elements are exactly 0, kept ones are not: inputs are away from 0), so
	// the check is that the backward pass uses the forward's mask and scale.
	var mask []float64
	cases = append(cases, gradCase{
		name: "dropout", shapes: [][]int{{8, 16}}, k: 2, out16: true,
		prep: func(_ int, v []float32) []float32 { return tAway(v, 0.05) },
		build: func(g *nn.Graph, in []*nn.Var) *nn.Var {
			y := g.Dropout(in[0], 0.25)
			mask = nil
			for _, v := range tRead(t, y.Value()) {
				mask = append(mask, map[bool]float64{true: 0, false: 1 / 0.75}[v == 0])
			}
			return y
		},
		host: func(in [][]float64) []float64 {
			return zipWith(in[0], mask, func(x, m float64) float64 { return x * m })
		},
	})
	for _, r := range []nn.Reduction{nn.Mean, nn.Sum} {
		cases = append(cases, gradCase{
			name: fmt.Sprintf("mse_loss reduction=%d", r), shapes: [][]int{{3, 5}, {3, 5}}, k: 4,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.MSELoss(in[0], in[1], r) },
			host: func(in [][]float64) []float64 {
				s := sum(zipWith(in[0], in[1], func(p, t float64) float64 { return (p - t) * (p - t) }))
				if r == nn.Mean {
					s /= float64(len(in[0]))
				}
				return []float64{s}
			},
		})
	}
	labelVals := []int32{0, 3, 1, 4}
	labels := tLabels(t, d, labelVals...)
	for _, r := range []nn.Reduction{nn.Mean, nn.Sum} {
		cases = append(cases, gradCase{
			name: fmt.Sprintf("cross_entropy reduction=%d", r), shapes: [][]int{{4, 5}}, k: 5 + ref.ExpRoundings,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, 2) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.CrossEntropyLoss(in[0], labels, r) },
			host:  func(in [][]float64) []float64 { return []float64{hostCrossEntropy(in[0], labelVals, 5, r)} },
		})
	}
	cases = append(cases,
		gradCase{
			name: "layer_norm", shapes: [][]int{{3, 6}, {6}, {6}}, k: 8 * 6,
			prep: func(i int, v []float32) []float32 {
				if i == 1 {
					return shifted(v, 1) // gamma near 1
				}
				return v
			},
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.LayerNorm(in[0], in[1], in[2], 1e-5) },
			host:  func(in [][]float64) []float64 { return hostLayerNorm(in[0], in[1], in[2], 6, 1e-5) },
		},
		gradCase{
			// Rows longer than a workgroup.
			name: "layer_norm wide", shapes: [][]int{{2, 600}, {600}, {600}}, k: 64,
			prep: func(i int, v []float32) []float32 {
				if i == 1 {
					return shifted(v, 1)
				}
				return v
			},
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.LayerNorm(in[0], in[1], in[2], 1e-5) },
			host:  func(in [][]float64) []float64 { return hostLayerNorm(in[0], in[1], in[2], 600, 1e-5) },
		},
		gradCase{
			// A var used three times: its gradient is summed before it flows on.
			name: "composite", shapes: [][]int{{3, 4}}, k: 8, out16: true,
			prep: func(_ int, v []float32) []float32 { return tAway(v, 0.05) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var {
				h := g.Scale(in[0], 1.5)
				return g.Add(g.Mul(h, h), g.ReLU(h))
			},
			host: func(in [][]float64) []float64 {
				return mapf(in[0], func(x float64) float64 { h := 1.5 * x; return h*h + max(h, 0) })
			},
		},
	)
	return cases
}

func TestGradients(t *testing.T) {
	d := devtest.Open(t)
	for _, c := range gradCases(t, d) {
		for _, dt := range []tensor.DType{f32, f16} {
			if dt == f16 && c.noHalf {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s", c.name, dt), func(t *testing.T) { checkGradCase(t, d, c, dt) })
		}
	}
}

// checkGradCase runs c in dtype dt (fp16: under autocast) and compares the
// forward output and the gradients of every input with the host.
func checkGradCase(t *testing.T, d *vk.Device, c gradCase, dt tensor.DType) {
	vals := make([][]float32, len(c.shapes))
	in64 := make([][]float64, len(c.shapes))
	params := make([]*nn.Param, len(c.shapes))
	for i, s := range c.shapes {
		v := tRand(tLen(s), uint64(100+i), 1, f32)
		if c.prep != nil {
			v = c.prep(i, v)
		}
		vals[i] = ref.RoundAll(v, dt)
		in64[i] = to64(vals[i])
		params[i] = tParam(t, d, fmt.Sprintf("in%d", i), vals[i], s...)
	}
	g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(dt == f16, tensor.Float16), Seeds: nn.NewSeedSource(11)})
	defer g.Release()
	vars := make([]*nn.Var, len(params))
	for i, p := range params {
		vars[i] = g.Param(p)
		if dt == f16 && !c.lower {
			vars[i] = g.Cast(vars[i], f16)
		}
	}
	y := c.build(g, vars)
	wantDT := f32
	if dt == f16 && c.out16 {
		wantDT = f16
	}
	if y.DType() != wantDT {
		t.Errorf("output is %s, want %s", y.DType(), wantDT)
	}
	hostY := c.host(in64)
	ref.Check(t, "forward", tRead(t, y.Value()), roundAll64(hostY, y.DType()), tMaxScale(hostY), ref.Tol(y.DType(), c.k))

	w := tRand(y.Value().Len(), 7, 1, f16)
	loss := g.Sum(g.Mul(y, g.Input(tInput(t, d, w, y.Shape()...))))
	if err := g.Backward(loss, nil); err != nil {
		t.Fatal(err)
	}
	w64 := to64(w)
	lossFn := func(in [][]float64) float64 {
		return sum(zipWith(c.host(in), w64, func(y, w float64) float64 { return y * w }))
	}
	for i, p := range params {
		want := finiteDiff(lossFn, in64, i)
		ref.Check(t, "d"+p.Name, tRead(t, p.Grad), want, tMaxScale(want), ref.Tol(dt, c.k))
	}
}

// finiteDiff returns d f / d in[i] by central differences in float64.
func finiteDiff(f func([][]float64) float64, in [][]float64, i int) []float64 {
	g := make([]float64, len(in[i]))
	for j, x := range in[i] {
		h := 1e-5 * max(1, math.Abs(x))
		in[i][j] = x + h
		fp := f(in)
		in[i][j] = x - h
		fm := f(in)
		in[i][j] = x
		g[j] = (fp - fm) / (2 * h)
	}
	return g
}

// Host float64 forwards.

func hostMatMul(a, b []float64, m, k, n int, tA, tB bool) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for l := 0; l < k; l++ {
				av, bv := a[i*k+l], b[l*n+j]
				if tA {
					av = a[l*m+i]
				}
				if tB {
					bv = b[j*k+l]
				}
				s += av * bv
			}
			out[i*n+j] = s
		}
	}
	return out
}

// hostLinear is x w^T + b for x [m, k], w [n, k], b [n] or nil.
func hostLinear(x, w, b []float64, m, k, n int) []float64 {
	y := hostMatMul(x, w, m, k, n, false, true)
	if b != nil {
		for i := range y {
			y[i] += b[i%n]
		}
	}
	return y
}

func hostCrossEntropy(logits []float64, labels []int32, cols int, r nn.Reduction) float64 {
	rows := len(logits) / cols
	var total float64
	for i := 0; i < rows; i++ {
		row := logits[i*cols : (i+1)*cols]
		m := math.Inf(-1)
		for _, v := range row {
			m = max(m, v)
		}
		var s float64
		for _, v := range row {
			s += math.Exp(v - m)
		}
		total += m + math.Log(s) - row[labels[i]]
	}
	if r == nn.Mean {
		total /= float64(rows)
	}
	return total
}

func hostLayerNorm(x, gamma, beta []float64, cols int, eps float64) []float64 {
	y := make([]float64, len(x))
	for r := 0; r < len(x)/cols; r++ {
		row := x[r*cols : (r+1)*cols]
		mean := sum(row) / float64(cols)
		var v float64
		for _, e := range row {
			v += (e - mean) * (e - mean)
		}
		rstd := 1 / math.Sqrt(v/float64(cols)+eps)
		for i, e := range row {
			y[r*cols+i] = (e-mean)*rstd*gamma[i] + beta[i]
		}
	}
	return y
}

func to64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

func roundAll64(v []float64, dt tensor.DType) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = ref.Round(x, dt)
	}
	return out
}

func mapf(v []float64, f func(float64) float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = f(x)
	}
	return out
}

func zipWith(a, b []float64, f func(a, b float64) float64) []float64 {
	out := make([]float64, len(a))
	for i := range a {
		out[i] = f(a[i], b[i])
	}
	return out
}

func sum(v []float64) float64 {
	var s float64
	for _, x := range v {
		s += x
	}
	return s
}

func scaled(v []float32, s float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * s
	}
	return out
}

func shifted(v []float32, s float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x + s
	}
	return out
}
