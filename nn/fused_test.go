package nn_test

import (
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// fusedOpt is what TestFusedUnscale needs of an optimizer.
type fusedOpt interface {
	scaler.FusedUnscaler
	ZeroGrad() error
	Close() error
}

// TestFusedUnscale trains two copies of an MLP under fp16 autocast, each
// with its own GradScaler, one with a fused optimizer (AdamOptions.Fused,
// SGDOptions.Fused): their weights agree bit for bit after every step,
// through steps the scalers skip for an overflow and back off from,
// growths, weight decay, AdamW, half weights, SGD's momentum and the
// deterministic mode. The fused one's gradients stay scaled (on the steps
// taken, the plain one's are the same times the inverse scale), except on
// the steps that call Unscale first, where the fused optimizer steps on
// unscaled gradients as the plain one does.
func TestFusedUnscale(t *testing.T) {
	for _, c := range []struct {
		name                        string
		det, decoupled, halves, sgd bool
	}{{name: "adam"}, {name: "adamw-halves", decoupled: true, halves: true}, {name: "adam-deterministic", det: true},
		{name: "sgd", sgd: true}, {name: "sgd-deterministic", sgd: true, det: true}} {
		t.Run(c.name, func(t *testing.T) {
			d := devtest.Open(t, vk.Options{Deterministic: c.det})
			type run struct {
				m   nn.Sequential
				opt fusedOpt
				sc  *scaler.Scaler
			}
			mk := func(fused bool) run {
				rng := rand.New(rand.NewPCG(3, 4))
				m := nn.Sequential{nn.NewLinear(d, "l1", 9, 7, rng), nn.ReLU{}, nn.NewLinear(d, "l2", 7, 3, rng)}
				t.Cleanup(func() { nn.Close(m) })
				var opt fusedOpt
				var err error
				if c.sgd {
					opt, err = nn.NewSGD(m.Parameters(), nn.SGDOptions{LR: 0.1, Momentum: 0.9, Nesterov: true, WeightDecay: 0.01, Fused: fused})
				} else {
					var adam *nn.Adam
					adam, err = nn.NewAdam(m.Parameters(), nn.AdamOptions{LR: 1e-2, WeightDecay: 0.01, Decoupled: c.decoupled, Fused: fused})
					if err == nil {
						adam.KeepHalfWeights(c.halves)
					}
					opt = adam
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { opt.Close() })
				// 2^24 overflows the fp16 backward until the scale has
				// backed off; growing every 2 clean steps overflows again.
				sc, err := scaler.New(scaler.Options{InitScale: 1 << 24, GrowthInterval: 2})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { sc.Close() })
				return run{m, opt, sc}
			}
			plain, fused := mk(false), mk(true)
			if plain.opt.FusesUnscale() || !fused.opt.FusesUnscale() {
				t.Fatal("FusesUnscale does not follow AdamOptions.Fused")
			}
			in := tInput(t, d, tRand(16*9, 5, 1, tensor.Float32), 16, 9)
			labels := tLabels(t, d, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0)
			// step runs one step of r, after Unscale if unscale, and
			// returns the scale it ran with and whether it was skipped.
			step := func(r run, unscale bool) (float64, bool) {
				t.Helper()
				g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16})
				defer g.Release()
				l := g.CrossEntropyLoss(r.m.Forward(g, g.Input(in)), labels, nn.Mean)
				if err := r.opt.ZeroGrad(); err != nil {
					t.Fatal(err)
				}
				if err := g.Backward(l, r.sc.Seed(l.Value())); err != nil {
					t.Fatal(err)
				}
				scale, err := r.sc.ScaleValue()
				if err != nil {
					t.Fatal(err)
				}
				if unscale {
					if err := r.sc.Unscale(r.opt); err != nil {
						t.Fatal(err)
					}
				}
				sk, err := r.sc.Step(r.opt)
				if err != nil {
					t.Fatal(err)
				}
				skipped, err := sk.Value()
				if err != nil {
					t.Fatal(err)
				}
				if err := r.sc.Update(); err != nil {
					t.Fatal(err)
				}
				return scale, skipped
			}
			var skips, steps, scaledGrads int
			scales := map[float64]bool{}
			for s := range 16 {
				unscale := s%5 == 4
				scale, skipped := step(plain, unscale)
				fscale, fskipped := step(fused, unscale)
				if fscale != scale || fskipped != skipped {
					t.Fatalf("step %d: fused scale %g, skipped %v; plain %g, %v", s, fscale, fskipped, scale, skipped)
				}
				scales[scale] = true
				if skipped {
					skips++
				} else {
					steps++
				}
				for i, p := range plain.m.Parameters() {
					fp := fused.m.Parameters()[i]
					tSameBits(t, "value of "+p.Name, tRead(t, fp.Value), tRead(t, p.Value))
					if skipped {
						continue // infs and NaNs: no bits to compare
					}
					want, got := tRead(t, p.Grad), tRead(t, fp.Grad)
					if !unscale {
						// The scales are powers of 2: the products are exact.
						for j := range got {
							got[j] *= float32(1 / scale)
						}
						scaledGrads++
					}
					tSameBits(t, "gradient of "+p.Name+" (fused: times the inverse scale)", got, want)
				}
			}
			if skips == 0 || steps < 4 || len(scales) < 3 || scaledGrads == 0 {
				t.Errorf("%d skipped steps, %d taken, %d scales: the test needs skips, steps and scale changes", skips, steps, len(scales))
			}
		})
	}
}
