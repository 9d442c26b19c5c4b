package nn_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// attentionRef is multi-head self-attention in float64: x [b][t][c] flat,
// wqkv [3c, c], wproj [c, c], hidden(b, i, j) hiding key j from query i.
func attentionRef(x, wqkv, wproj []float64, b, t, c, heads int, hidden func(b, i, j int) bool) []float64 {
	y, _ := ref.Attention{Batch: b, T: t, Heads: heads, C: c, Scale: 1 / math.Sqrt(float64(c/heads)), Hidden: hidden}.Forward(linearRef(x, wqkv, 3*c, c))
	return linearRef(y, wproj, c, c)
}

// linearRef is x [rows, in] times w [out, in] transposed.
func linearRef(x, w []float64, out, in int) []float64 {
	y := make([]float64, len(x)/in*out)
	for r := range len(x) / in {
		for o := range out {
			for k := range in {
				y[r*out+o] += x[r*in+k] * w[o*in+k]
			}
		}
	}
	return y
}

// TestSelfAttention checks the Module form of attention against
// attentionRef: causal (the fused kernels), not causal, with a key-padding
// mask, and causal with a [seq, seq] mask; in fp32 and under fp16
// autocast, and the gradient of x against central differences; it
// composes in a Sequential, and a 2-D x panics.
func TestSelfAttention(t *testing.T) {
	d := devtest.Open(t)
	const b, tt, c, heads = 2, 5, 8, 2
	padVals := []int32{0, 0, 0, 1, 1, 0, 0, 0, 0, 1} // the last keys of each sequence are padding
	pad := tensor.FromInt32(d, padVals, b, 1, 1, tt)
	bandVals := make([]int32, tt*tt)
	for i := range tt {
		for j := range tt {
			if i-j > 2 {
				bandVals[i*tt+j] = 1 // a local window: at most 2 keys back
			}
		}
	}
	band := tensor.FromInt32(d, bandVals, tt, tt)
	defer band.Release()
	defer pad.Release()
	cases := []struct {
		name   string
		causal bool
		mask   *tensor.Tensor
		masked func(b, i, j int) bool
	}{
		{"causal", true, nil, func(_, i, j int) bool { return j > i }},
		{"full", false, nil, func(_, _, _ int) bool { return false }},
		{"key padding", false, pad, func(b, _, j int) bool { return padVals[b*tt+j] != 0 }},
		{"causal band", true, band, func(_, i, j int) bool { return j > i || i-j > 2 }},
	}
	for ci, cs := range cases {
		for _, dt := range []tensor.DType{f32, f16} {
			t.Run(fmt.Sprintf("%s/%s", cs.name, dt), func(t *testing.T) {
				a := nn.NewSelfAttention(d, "attn", nn.BlockOptions{Dim: c, Heads: heads, Std: 0.3}, cs.causal, rand.New(rand.NewPCG(uint64(ci), 1)))
				a.Mask = cs.mask
				defer nn.Close(a)
				xs := tRand(b*tt*c, uint64(10+ci), 1, f32)
				g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(dt == f16, tensor.Float16)})
				defer g.Release()
				xt := tInput(t, d, xs, b, tt, c)
				x := g.RequiresGrad(xt)
				y := nn.Sequential{a}.Forward(g, x)
				wqkv, wproj := to64(tRead(t, a.QKV.W.Value)), to64(tRead(t, a.Proj.W.Value))
				host := func(x []float64) []float64 { return attentionRef(x, wqkv, wproj, b, tt, c, heads, cs.masked) }
				want := host(to64(xs))
				tol := ref.Tol(f32, 64)
				if dt == f16 {
					tol = 8 * ref.Unit(f16)
				}
				ref.Check(t, "output", tRead(t, y.Value()), want, tMaxScale(want), tol)
				if dt != f32 {
					return
				}
				w := tRand(len(want), 3, 1, f32)
				if err := g.Backward(g.Sum(g.Mul(y, g.Input(tInput(t, d, w, b, tt, c)))), nil); err != nil {
					t.Fatal(err)
				}
				in := [][]float64{to64(xs)}
				grad := finiteDiff(func(in [][]float64) float64 {
					return sum(zipWith(host(in[0]), to64(w), func(a, b float64) float64 { return a * b }))
				}, in, 0)
				ref.Check(t, "dx", tRead(t, x.Grad()), grad, tMaxScale(grad), ref.Tol(f32, 64))
			})
		}
	}
	a := nn.NewSelfAttention(d, "attn", nn.BlockOptions{Dim: c, Heads: heads}, false, rand.New(rand.NewPCG(1, 1)))
	defer nn.Close(a)
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	defer func() {
		if _, ok := recover().(*tensor.ShapeError); !ok {
			t.Error("a 2-D x: no *tensor.ShapeError")
		}
	}()
	a.Forward(g, g.Input(tInput(t, d, make([]float32, tt*c), tt, c)))
}
