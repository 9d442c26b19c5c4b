package nn_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Gradient checks of the layout ops, softmax and log-softmax along any
// axis, batched MatMul with broadcast batch dimensions, and a causal
// attention composed of them, as in grad_test.go.

func layoutGradCases(t *testing.T, d *vk.Device) []gradCase {
	var cases []gradCase
	cases = append(cases,
		gradCase{
			name: "permute", shapes: [][]int{{2, 3, 4}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Permute(in[0], 2, 0, -2) },
			host: func(in [][]float64) []float64 {
				y, _ := ref.Permute(in[0], []int{2, 3, 4}, []int{2, 0, 1})
				return y
			},
		},
		gradCase{
			name: "transpose", shapes: [][]int{{3, 5}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Transpose(in[0], 0, -1) },
			host: func(in [][]float64) []float64 {
				y, _ := ref.Permute(in[0], []int{3, 5}, []int{1, 0})
				return y
			},
		},
		gradCase{
			name: "narrow", shapes: [][]int{{3, 5}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Narrow(in[0], 1, -4, 3) },
			host:  func(in [][]float64) []float64 { return ref.Narrow(in[0], []int{3, 5}, 1, 1, 3) },
		},
		gradCase{
			name: "narrow whole", shapes: [][]int{{3, 5}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Narrow(in[0], 0, 0, 3) },
			host:  func(in [][]float64) []float64 { return in[0] },
		},
		gradCase{
			name: "concat", shapes: [][]int{{2, 3}, {2, 1}, {2, 2}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Concat(-1, in...) },
			host: func(in [][]float64) []float64 {
				return ref.Concat(1, in, [][]int{{2, 3}, {2, 1}, {2, 2}})
			},
		},
		gradCase{
			name: "stack", shapes: [][]int{{3, 2}, {3, 2}}, k: 1, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Stack(1, in...) },
			host: func(in [][]float64) []float64 {
				return ref.Concat(1, in, [][]int{{3, 1, 2}, {3, 1, 2}})
			},
		},
	)
	idx := []int32{0, 3, 3, 1, 0, 2, 2, 2, 1, 0, 3, 3, 0, 1, 2}
	ix := tensor.FromInt32(d, idx, 3, 5)
	t.Cleanup(ix.Release)
	cases = append(cases, gradCase{
		name: "gather", shapes: [][]int{{3, 4}}, k: 4, out16: true,
		build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Gather(in[0], 1, ix) },
		host:  func(in [][]float64) []float64 { return ref.Gather(in[0], []int{3, 4}, 1, idx, []int{3, 5}, math.NaN()) },
	})
	// TopK's and Sort's values: a gather by the indices of values with
	// no ties (random), so central differences see the same order.
	cases = append(cases, gradCase{
		name: "topk", shapes: [][]int{{3, 6}}, k: 4, out16: true,
		build: func(g *nn.Graph, in []*nn.Var) *nn.Var {
			v, idx := g.TopK(in[0], 4)
			t.Cleanup(idx.Release)
			return v
		},
		host: func(in [][]float64) []float64 { return sorted64(in[0], 6, 4, true) },
	}, gradCase{
		name: "sort", shapes: [][]int{{2, 5}}, k: 4, out16: true,
		build: func(g *nn.Graph, in []*nn.Var) *nn.Var {
			v, idx := g.Sort(in[0], false)
			t.Cleanup(idx.Release)
			return v
		},
		host: func(in [][]float64) []float64 { return sorted64(in[0], 5, 5, false) },
	})
	for _, c := range []struct {
		shape []int
		axis  int
	}{{[]int{3, 5}, -1}, {[]int{4, 3}, 0}, {[]int{2, 3, 4}, 1}} {
		ax := c.axis
		if ax < 0 {
			ax += len(c.shape)
		}
		k := c.shape[ax] + ref.ExpRoundings
		cases = append(cases,
			gradCase{
				name: fmt.Sprintf("softmax %v axis %d", c.shape, c.axis), shapes: [][]int{c.shape}, k: k,
				prep:  func(_ int, v []float32) []float32 { return scaled(v, 2) },
				build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Softmax(in[0], c.axis) },
				host:  func(in [][]float64) []float64 { y, _ := hostSoftmax(in[0], c.shape, ax); return y },
			},
			gradCase{
				name: fmt.Sprintf("log_softmax %v axis %d", c.shape, c.axis), shapes: [][]int{c.shape}, k: k,
				prep:  func(_ int, v []float32) []float32 { return scaled(v, 2) },
				build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.LogSoftmax(in[0], c.axis) },
				host:  func(in [][]float64) []float64 { _, y := hostSoftmax(in[0], c.shape, ax); return y },
			})
	}
	for _, c := range []struct {
		a, b   []int
		tA, tB bool
	}{
		{[]int{2, 3, 4}, []int{2, 4, 5}, false, false},
		{[]int{2, 3, 4}, []int{4, 5}, false, false},
		{[]int{2, 3, 4}, []int{5, 4}, false, true},
		{[]int{4, 3}, []int{2, 4, 5}, true, false},
		{[]int{2, 1, 3, 4}, []int{3, 5, 4}, false, true},
		{[]int{1, 2, 4, 3}, []int{2, 1, 4, 5}, true, false},
	} {
		cases = append(cases, gradCase{
			name: fmt.Sprintf("bmm %v T%v @ %v T%v", c.a, c.tA, c.b, c.tB), shapes: [][]int{c.a, c.b}, k: 4*4*6 + 4,
			lower: true, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.MatMul(in[0], in[1], c.tA, c.tB) },
			host:  func(in [][]float64) []float64 { return hostBMM(in[0], c.a, in[1], c.b, c.tA, c.tB) },
		})
	}
	// Causal attention: softmax(q k^T * scale + mask) v over [B, H, T, D],
	// the mask built on the host and added to the scores.
	const B, H, T, D = 2, 2, 5, 4
	mask := make([]float32, T*T)
	for i := range T {
		for j := i + 1; j < T; j++ {
			mask[i*T+j] = -1e30
		}
	}
	m := tInput(t, d, mask, 1, 1, T, T)
	scale := float32(1 / math.Sqrt(D))
	shape := []int{B, H, T, D}
	cases = append(cases, gradCase{
		name: "causal attention", shapes: [][]int{shape, shape, shape}, k: 4 * (T*D + ref.ExpRoundings), lower: true, out16: true,
		build: func(g *nn.Graph, in []*nn.Var) *nn.Var {
			s := g.Scale(g.MatMul(in[0], in[1], false, true), scale)
			// Add takes equal shapes: the [1, 1, T, T] mask is repeated
			// over B and H with Concat.
			mv := g.Input(m)
			full := g.Concat(0, mv, mv)
			full = g.Concat(1, full, full)
			p := g.Softmax(g.Add(s, full), -1)
			return g.MatMul(p, in[2], false, false)
		},
		host: func(in [][]float64) []float64 {
			s := hostBMM(in[0], shape, in[1], shape, false, true)
			for i := range s {
				s[i] = s[i]*float64(scale) + float64(mask[i%(T*T)])
			}
			p, _ := hostSoftmax(s, []int{B, H, T, T}, 3)
			return hostBMM(p, []int{B, H, T, T}, in[2], shape, false, false)
		},
	})
	return cases
}

func TestLayoutGradients(t *testing.T) {
	d := devtest.Open(t)
	for _, c := range layoutGradCases(t, d) {
		for _, dt := range []tensor.DType{f32, f16} {
			t.Run(fmt.Sprintf("%s/%s", c.name, dt), func(t *testing.T) { checkGradCase(t, d, c, dt) })
		}
	}
}

// hostSoftmax is softmax and log-softmax of x along axis, in float64.
func hostSoftmax(x []float64, shape []int, axis int) (soft, logSoft []float64) {
	outer, k, inner := ref.Split(shape, axis)
	soft, logSoft = make([]float64, len(x)), make([]float64, len(x))
	for o := range outer {
		for i := range inner {
			at := func(j int) int { return (o*k+j)*inner + i }
			m := math.Inf(-1)
			for j := range k {
				m = max(m, x[at(j)])
			}
			var s float64
			for j := range k {
				s += math.Exp(x[at(j)] - m)
			}
			for j := range k {
				soft[at(j)] = math.Exp(x[at(j)]-m) / s
				logSoft[at(j)] = x[at(j)] - m - math.Log(s)
			}
		}
	}
	return soft, logSoft
}

// hostBMM is torch.matmul of a and b (stored transposed with tA, tB) with
// broadcast batch dimensions, in float64.
func hostBMM(a []float64, as []int, b []float64, bs []int, tA, tB bool) []float64 {
	ra, rb := len(as), len(bs)
	m, k := as[ra-2], as[ra-1]
	if tA {
		m, k = k, m
	}
	n := bs[rb-1]
	if tB {
		n = bs[rb-2]
	}
	ba, bb := as[:ra-2], bs[:rb-2]
	r := max(len(ba), len(bb))
	dim := func(s []int, i int) int {
		if j := i - (r - len(s)); j >= 0 {
			return s[j]
		}
		return 1
	}
	batch := make([]int, r)
	total := 1
	for i := range batch {
		batch[i] = max(dim(ba, i), dim(bb, i))
		total *= batch[i]
	}
	var out []float64
	for e := range total {
		offA, offB, rem := 0, 0, e
		idx := make([]int, r)
		for i := r - 1; i >= 0; i-- {
			idx[i] = rem % batch[i]
			rem /= batch[i]
		}
		for i := range r {
			da, db := dim(ba, i), dim(bb, i)
			offA = offA*da + min(idx[i], da-1)
			offB = offB*db + min(idx[i], db-1)
		}
		out = append(out, hostMatMul(a[offA*m*k:(offA+1)*m*k], b[offB*k*n:(offB+1)*k*n], m, k, n, tA, tB)...)
	}
	return out
}

// sorted64 is each row of x [rows, cols] sorted (largest first with
// desc), its first k.
func sorted64(x []float64, cols, k int, desc bool) []float64 {
	var out []float64
	for r := 0; r < len(x)/cols; r++ {
		row := slices.Clone(x[r*cols : (r+1)*cols])
		slices.Sort(row)
		if desc {
			slices.Reverse(row)
		}
		out = append(out, row[:k]...)
	}
	return out
}
