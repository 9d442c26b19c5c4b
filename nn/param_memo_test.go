package nn_test

import (
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
)

// TestParamOneVar: a graph gives each parameter one var, however many
// parameters it uses (the first few are kept in a list, the rest in a map),
// so that the gradient of a parameter used twice sums both uses.
func TestParamOneVar(t *testing.T) {
	d := devtest.Open(t)
	const n = 12 // past the graph's short list
	ps := make([]*nn.Param, n)
	for i := range ps {
		ps[i] = tParam(t, d, "p", []float32{float32(i + 1), 1}, 2)
	}
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	var sum *nn.Var
	for round := 0; round < 2; round++ {
		for i, p := range ps {
			v := g.Param(p)
			if again := g.Param(p); again != v {
				t.Fatalf("round %d: param %d: two vars", round, i)
			}
			// p used twice with weights 1 and i+1 over both rounds.
			x := g.Input(tInput(t, d, []float32{float32(round*i + 1), 0}, 2))
			term := g.Sum(g.Mul(v, x))
			if sum == nil {
				sum = term
			} else {
				sum = g.Add(sum, term)
			}
		}
	}
	if err := g.Backward(sum, nil); err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		got := tRead(t, p.Grad)
		if want := float32(1 + i + 1); got[0] != want || got[1] != 0 {
			t.Errorf("param %d: grad %v, want [%g 0]", i, got, want)
		}
	}
}
