package nn_test

import (
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
)

// TestGradReady: Options.GradReady is called once per trainable parameter
// an op uses, after its last contribution: a tied weight used by two ops
// (and, under autocast, through one cached cast) holds its final gradient
// when its call comes. Frozen and unused parameters get no call.
func TestGradReady(t *testing.T) {
	d := devtest.Open(t)
	w := tParam(t, d, "w", tRand(12, 1, 1, f32), 3, 4) // tied: used twice
	b := tParam(t, d, "b", tRand(3, 2, 1, f32), 3)
	frozen := tParam(t, d, "frozen", tRand(12, 3, 1, f32), 3, 4)
	frozen.Frozen = true
	unused := tParam(t, d, "unused", tRand(3, 4, 1, f32), 3)
	x := tInput(t, d, tRand(8, 5, 1, f32), 2, 4)
	x2 := tInput(t, d, tRand(8, 6, 1, f32), 2, 4)
	sc, err := scaler.New(scaler.Options{InitScale: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	for _, autocast := range []bool{false, true} {
		for _, p := range []*nn.Param{w, b, frozen, unused} {
			if err := p.ZeroGrad(); err != nil {
				t.Fatal(err)
			}
		}
		var names []string
		atCall := map[string][]float32{}
		g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(autocast, tensor.Float16), GradReady: func(p *nn.Param) {
			names = append(names, p.Name)
			atCall[p.Name] = tRead(t, p.Grad)
		}})
		g.Param(unused)
		h := g.Linear(g.Input(x), g.Param(w), g.Param(b))
		h2 := g.Linear(g.Input(x2), g.Param(frozen), nil)
		tied := g.Linear(g.Input(x2), g.Param(w), nil)
		loss := g.Sum(g.Mul(g.Add(h, h2), tied))
		if err := loss.Scaled(sc).Backward(); err != nil {
			t.Fatal(err)
		}
		slices.Sort(names)
		if !slices.Equal(names, []string{"b", "w"}) {
			t.Errorf("autocast %v: GradReady called for %v, want b and w once each", autocast, names)
		}
		for _, p := range []*nn.Param{w, b} {
			if got := atCall[p.Name]; got != nil {
				tSameBits(t, p.Name+"'s gradient when GradReady was called", got, tRead(t, p.Grad))
			}
		}
		g.Release()
	}
}
