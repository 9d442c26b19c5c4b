package nn_test

import (
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// TestLinearNoBias: a Linear without bias computes x W^T and has the
// weight as its one parameter.
func TestLinearNoBias(t *testing.T) {
	d := devtest.Open(t)
	l := nn.NewLinearNoBias(d, "fc", 3, 2, rand.New(rand.NewPCG(1, 1)))
	defer nn.Close(l)
	if ps := l.Parameters(); len(ps) != 1 || ps[0].Name != "fc.weight" || l.B != nil {
		t.Fatalf("parameters %v", ps)
	}
	w := tParam(t, d, "w", []float32{1, 2, 3, -1, 0, 0.5}, 2, 3)
	if err := l.W.Set(w.Value); err != nil {
		t.Fatal(err)
	}
	x := tInput(t, d, []float32{1, 1, 1, 2, 0, -2}, 2, 3)
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	tSameBits(t, "x W^T", tRead(t, l.Forward(g, g.Input(x)).Value()), []float32{6, -0.5, -4, -3})
}

// TestBlockModules: the blocks' parameters carry nanoGPT's names and
// shapes, biases only with Bias, and bad sizes panic naming the layer.
func TestBlockModules(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(1, 1))
	for _, bias := range []bool{false, true} {
		b := nn.NewBlock(d, "h.0", nn.BlockOptions{Dim: 8, Heads: 2, Bias: bias, Layers: 4}, rng)
		shapes := map[string][]int{}
		for _, p := range b.Parameters() {
			shapes[p.Name] = p.Value.Shape()
		}
		nn.Close(b)
		want := map[string][]int{"h.0.ln_1.weight": {8}, "h.0.attn.c_attn.weight": {24, 8}, "h.0.attn.c_proj.weight": {8, 8},
			"h.0.ln_2.weight": {8}, "h.0.mlp.c_fc.weight": {32, 8}, "h.0.mlp.c_proj.weight": {8, 32}}
		if bias {
			for k, v := range map[string][]int{"h.0.ln_1.bias": {8}, "h.0.attn.c_attn.bias": {24}, "h.0.attn.c_proj.bias": {8},
				"h.0.ln_2.bias": {8}, "h.0.mlp.c_fc.bias": {32}, "h.0.mlp.c_proj.bias": {8}} {
				want[k] = v
			}
		}
		if len(shapes) != len(want) {
			t.Errorf("bias %v: parameters %v, want %v", bias, shapes, want)
		}
		for k, v := range want {
			if got := shapes[k]; len(got) != len(v) || got[0] != v[0] || (len(v) == 2 && got[1] != v[1]) {
				t.Errorf("bias %v: %s has shape %v, want %v", bias, k, got, v)
			}
		}
	}
	for name, f := range map[string]func(){
		"dim not a multiple of heads": func() { nn.NewBlock(d, "b", nn.BlockOptions{Dim: 10, Heads: 4}, rng) },
		"no heads":                    func() { nn.NewMLP(d, "m", nn.BlockOptions{Dim: 8}, rng) },
		"dropout 1":                   func() { nn.NewCausalSelfAttention(d, "a", nn.BlockOptions{Dim: 8, Heads: 2, Dropout: 1}, rng) },
		"nil rng":                     func() { nn.NewBlock(d, "b", nn.BlockOptions{Dim: 8, Heads: 2}, nil) },
	} {
		if r, ok := recoverType(f).(*tensor.UsageError); !ok {
			t.Errorf("%s: panicked with %v, not a *tensor.UsageError", name, r)
		}
	}
	// x of the wrong width, or rows that are not a whole number of sequences.
	a := nn.NewCausalSelfAttention(d, "a", nn.BlockOptions{Dim: 8, Heads: 2}, rng)
	defer nn.Close(a)
	x := tInput(t, d, make([]float32, 5*8), 5, 8)
	x6 := tInput(t, d, make([]float32, 6*6), 6, 6)
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	for name, f := range map[string]func(){
		"5 rows in 2 sequences": func() { a.Forward(g, g.Input(x), 2) },
		"width 6 for dim 8":     func() { a.Forward(g, g.Input(x6), 1) },
	} {
		if r, ok := recoverType(f).(*tensor.ShapeError); !ok {
			t.Errorf("%s: panicked with %v, not a *tensor.ShapeError", name, r)
		}
	}
}

func recoverType(f func()) (r any) {
	defer func() { r = recover() }()
	f()
	return nil
}
