package nn_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Gradient checks of the transformer ops (embedding, layer norm without
// bias, causal self-attention), as grad_test.go's.

func attnGradCases(t *testing.T, d *vk.Device) []gradCase {
	const vocab, dim = 5, 4
	idxVals := []int32{3, 0, 3, 4, 1, 3} // repeated rows: their gradients sum
	idx := tensor.FromInt32(d, idxVals, 2, 3)
	t.Cleanup(idx.Release)
	embed := func(w []float64) []float64 {
		var y []float64
		for _, j := range idxVals {
			y = append(y, w[int(j)*dim:int(j+1)*dim]...)
		}
		return y
	}
	c1 := tRand(len(idxVals)*dim, 9, 1, f16)
	coef := tInput(t, d, c1, 2, 3, dim)
	cases := []gradCase{
		{
			name: "embedding", shapes: [][]int{{vocab, dim}}, k: 8, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.Embedding(in[0], idx) },
			host:  func(in [][]float64) []float64 { return embed(in[0]) },
		},
		{
			// Weight tying: the same table looks rows up and, transposed,
			// multiplies (nanoGPT's wte and lm_head); both gradients sum.
			// Under autocast the sum of fp16 products is compared as fp16.
			name: "embedding tied to matmul", shapes: [][]int{{vocab, dim}, {3, dim}}, k: 16, out16: true,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var {
				e := g.Mul(g.Embedding(in[0], idx), g.Input(coef))
				y := g.Add(g.Sum(e), g.Sum(g.MatMul(in[1], in[0], false, true)))
				if in[0].DType() == f16 {
					y = g.Cast(y, f16)
				}
				return y
			},
			host: func(in [][]float64) []float64 {
				s := sum(zipWith(embed(in[0]), to64(c1), func(a, b float64) float64 { return a * b }))
				return []float64{s + sum(hostMatMul(in[1], in[0], 3, dim, vocab, false, true))}
			},
		},
		{
			name: "layer_norm without bias", shapes: [][]int{{3, 6}, {6}}, k: 8 * 6,
			prep: func(i int, v []float32) []float32 {
				if i == 1 {
					return shifted(v, 1)
				}
				return v
			},
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.LayerNorm(in[0], in[1], nil, 1e-5) },
			host:  func(in [][]float64) []float64 { return hostLayerNorm(in[0], in[1], make([]float64, 6), 6, 1e-5) },
		},
	}
	// Attention: 2 sequences of 5 rows, 2 heads of 4; and one of 9 rows
	// with one head of 8, as [batch, T, 3C].
	for _, a := range []struct{ batch, t, heads, hd int }{{2, 5, 2, 4}, {1, 9, 1, 8}} {
		c := a.heads * a.hd
		r := ref.Attention{Batch: a.batch, T: a.t, Heads: a.heads, C: c, Scale: float64(float32(1 / math.Sqrt(float64(a.hd))))}
		shape := []int{a.batch * a.t, 3 * c}
		if a.batch == 1 {
			shape = []int{a.batch, a.t, 3 * c}
		}
		cases = append(cases, gradCase{
			name: fmt.Sprintf("scaled_dot_product_attention %v", shape), shapes: [][]int{shape}, k: 4*(a.hd+a.t) + ref.ExpRoundings,
			lower: true, out16: true,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, 2) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.CausalSelfAttention(in[0], a.batch, a.heads) },
			host: func(in [][]float64) []float64 {
				y, _ := r.Forward(in[0])
				return y
			},
		})
	}
	return cases
}

// TestAttentionMisuse: qkv columns that are not a multiple of 3*heads are
// a shape error naming the op.
func TestAttentionMisuse(t *testing.T) {
	d := devtest.Open(t)
	qkv := tParam(t, d, "qkv", tRand(4*18, 1, 1, f32), 4, 18)
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	var se *tensor.ShapeError
	func() {
		defer func() {
			err, ok := recover().(error)
			if !ok || !errors.As(err, &se) {
				t.Fatalf("columns 18 over 4 heads: panic %v, want a *tensor.ShapeError", err)
			}
			tContains(t, "columns", err.Error(), "CausalAttention", "[4 18]")
		}()
		g.CausalSelfAttention(g.Param(qkv), 1, 4)
	}()
}

func TestGradientsAttn(t *testing.T) {
	d := devtest.Open(t)
	for _, c := range attnGradCases(t, d) {
		for _, dt := range []tensor.DType{f32, f16} {
			t.Run(fmt.Sprintf("%s/%s", c.name, dt), func(t *testing.T) { checkGradCase(t, d, c, dt) })
		}
	}
}

// TestTransformerModules: the embedding and bias-free layer norm modules
// have the parameters and shapes of PyTorch's.
func TestTransformerModules(t *testing.T) {
	d := devtest.Open(t)
	e := nn.NewEmbedding(d, "wte", 65, 8, rand.New(rand.NewPCG(1, 2)))
	defer e.W.Close()
	ln := nn.NewLayerNormNoBias(d, "ln", 8)
	defer ln.Gamma.Close()
	if ps := ln.Parameters(); len(ps) != 1 || ps[0] != ln.Gamma || ln.Beta != nil {
		t.Errorf("NewLayerNormNoBias parameters %v, want gamma alone", ps)
	}
	if ps := e.Parameters(); len(ps) != 1 || ps[0].Name != "wte.weight" {
		t.Errorf("NewEmbedding parameters %v", ps)
	}
	w := tRead(t, e.W.Value)
	var m, v float64
	for _, x := range w {
		m += float64(x) / float64(len(w))
		v += float64(x) * float64(x) / float64(len(w))
	}
	if m < -0.2 || m > 0.2 || v < 0.75 || v > 1.25 {
		t.Errorf("NewEmbedding: mean %g, mean square %g, want N(0, 1)", m, v)
	}
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	idx := tLabels(t, d, 1, 64, 0)
	y := ln.Forward(g, e.Forward(g, idx))
	if fmt.Sprint(y.Shape()) != "[3 8]" {
		t.Errorf("shape %v, want [3 8]", y.Shape())
	}
	if err := g.Backward(g.Sum(y), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.W.Grad.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestEmbeddingMisuse: float indices are a dtype error naming the op.
func TestEmbeddingMisuse(t *testing.T) {
	d := devtest.Open(t)
	w := tParam(t, d, "w", tRand(12, 1, 1, f32), 4, 3)
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	fidx := tInput(t, d, []float32{1, 2}, 2)
	msg := tPanics(t, "float indices", func() { g.Embedding(g.Param(w), fidx) })
	tContains(t, "float indices", msg, "Embedding", "float32")
	var de *tensor.DTypeError
	func() {
		defer func() {
			if err, ok := recover().(error); !ok || !errors.As(err, &de) {
				t.Errorf("float indices: want a *tensor.DTypeError")
			}
		}()
		g.Embedding(g.Param(w), fidx)
	}()
}
