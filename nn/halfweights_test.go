package nn_test

import (
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// TestAdamKeepHalfWeights trains two copies of an MLP under autocast, one
// with an Adam that keeps half weights: their weights and losses agree bit
// for bit, step after step (a skipped step and a Param.Set included), and
// the graphs of the one that keeps them cast no weight once its copies are
// fresh, but do again after Param.Set.
func TestAdamKeepHalfWeights(t *testing.T) {
	d := devtest.Open(t)
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			type run struct {
				m   nn.Sequential
				opt *nn.Adam
			}
			mk := func(keep bool) run {
				rng := rand.New(rand.NewPCG(3, 4))
				m := nn.Sequential{nn.NewLinear(d, "l1", 9, 7, rng), nn.ReLU{}, nn.NewLinear(d, "l2", 7, 3, rng)}
				t.Cleanup(func() { nn.Close(m) })
				opt, err := nn.NewAdam(m.Parameters(), nn.AdamOptions{LR: 1e-2, WeightDecay: 0.01})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { opt.Close() })
				opt.KeepHalfWeights(keep)
				return run{m, opt}
			}
			plain, kept := mk(false), mk(true)
			in := tInput(t, d, tRand(16*9, 5, 1, tensor.Float32), 16, 9)
			labels := tLabels(t, d, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0)
			skip := tensor.Full(d, tensor.Float32, 1, 1)
			t.Cleanup(skip.Release)
			// step runs one step of r and returns its loss and the weight
			// casts its graph made.
			step := func(r run, skipped bool) (float32, int) {
				g := nn.NewGraph(d, nn.Options{Autocast: dt})
				defer g.Release()
				l := g.CrossEntropyLoss(r.m.Forward(g, g.Input(in)), labels, nn.Mean)
				casts := g.Autocast().CachedCasts()
				if err := g.Backward(l, nil); err != nil {
					t.Fatal(err)
				}
				var err error
				if skipped {
					err = r.opt.StepUnless(skip)
				} else {
					err = r.opt.Step()
				}
				if err == nil {
					err = r.opt.ZeroGrad()
				}
				if err != nil {
					t.Fatal(err)
				}
				return tRead(t, l.Value())[0], casts
			}
			same := func(what string) {
				t.Helper()
				for i, p := range plain.m.Parameters() {
					tSameBits(t, what+": "+p.Name, tRead(t, kept.m.Parameters()[i].Value), tRead(t, p.Value))
				}
			}
			for s, c := range []struct {
				skipped bool
				set     bool // Param.Set on both before the step
				casts   int  // the kept run's graph's weight casts
			}{
				{casts: 4}, {casts: 0}, {skipped: true, casts: 0}, {casts: 0},
				{set: true, casts: 1}, {casts: 0}, {set: true, skipped: true, casts: 1}, {casts: 0},
			} {
				if c.set {
					v := tInput(t, d, tRand(7*9, 11, 0.3, tensor.Float32), 7, 9)
					for _, r := range []run{plain, kept} {
						if err := r.m.Parameters()[0].Set(v); err != nil {
							t.Fatal(err)
						}
					}
				}
				want, _ := step(plain, c.skipped)
				got, casts := step(kept, c.skipped)
				if got != want {
					t.Errorf("step %d: loss %v, want %v", s, got, want)
				}
				if casts != c.casts {
					t.Errorf("step %d: %d weight casts, want %d", s, casts, c.casts)
				}
				same("step")
			}
			kept.opt.KeepHalfWeights(false)
			if _, casts := step(kept, false); casts != 4 {
				t.Errorf("after KeepHalfWeights(false): %d weight casts, want 4", casts)
			}
		})
	}
}
