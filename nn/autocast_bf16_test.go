package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

const bf16 = tensor.BFloat16

// TestAutocastBF16: a bf16 region runs the lower-precision ops in bf16 with
// the autocast contract (the same bits as the inputs cast by hand), nests
// with fp16 regions with one cached weight cast per dtype, and an MLP
// trains under it without a loss scaler.
func TestAutocastBF16(t *testing.T) {
	d := devtest.Open(t)
	w := tParam(t, d, "w", tRand(4*5, 1, 1, f32), 4, 5)
	b := tParam(t, d, "b", tRand(4, 2, 1, f32), 4)
	x := tInput(t, d, tRand(15, 3, 2, f32), 3, 5)

	t.Run("MatchesCastInputs", func(t *testing.T) {
		on := nn.NewGraph(d, nn.Options{Autocast: bf16})
		defer on.Release()
		got := on.Linear(on.Input(x), on.Param(w), on.Param(b))
		off := nn.NewGraph(d, nn.Options{})
		defer off.Release()
		want := off.Linear(off.Cast(off.Input(x), bf16), off.Cast(off.Param(w), bf16), off.Cast(off.Param(b), bf16))
		if got.DType() != bf16 || want.DType() != bf16 {
			t.Fatalf("linear under bf16 autocast: %s, by hand %s; want bfloat16", got.DType(), want.DType())
		}
		tSameBits(t, "linear", tRead(t, got.Value()), tRead(t, want.Value()))
		if dt := on.Sum(got).DType(); dt != f32 {
			t.Errorf("sum under bf16 autocast: %s, want float32", dt)
		}
	})

	t.Run("NestedDTypes", func(t *testing.T) {
		g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16})
		defer g.Release()
		lin := func() tensor.DType { return g.Linear(g.Input(x), g.Param(w), g.Param(b)).DType() }
		if dt := lin(); dt != f16 {
			t.Errorf("outer region: %s, want float16", dt)
		}
		g.WithAutocastDType(true, bf16, func() {
			if dt := lin(); dt != bf16 {
				t.Errorf("bf16 region: %s, want bfloat16", dt)
			}
			g.WithAutocast(false, func() {
				if dt := lin(); dt != f32 {
					t.Errorf("off inside bf16: %s, want float32", dt)
				}
				g.WithAutocast(true, func() { // keeps the dtype of the region it is in
					if dt := lin(); dt != bf16 {
						t.Errorf("on inside off inside bf16: %s, want bfloat16", dt)
					}
				})
			})
		})
		if dt := lin(); dt != f16 {
			t.Errorf("after the bf16 region: %s, want float16", dt)
		}
		if n := g.Autocast().CachedCasts(); n != 4 {
			t.Errorf("%d cached weight casts, want 4 (w and b, in fp16 and in bf16)", n)
		}
		msg := tPanics(t, "int32 region", func() { g.WithAutocastDType(true, tensor.Int32, func() {}) })
		tContains(t, "int32 region", msg, "WithAutocastDType", "int32")
	})

	t.Run("Trains", func(t *testing.T) {
		// A two-layer MLP on a fixed batch: bf16 autocast without a
		// scaler follows the fp32 run's losses closely.
		losses := func(o nn.Options) []float64 {
			rng := rand.New(rand.NewPCG(7, 8))
			m := nn.Sequential{nn.NewLinear(d, "l1", 16, 32, rng), nn.ReLU{}, nn.NewLinear(d, "l2", 32, 4, rng)}
			defer nn.Close(m)
			opt, err := nn.NewAdam(m.Parameters(), nn.AdamOptions{LR: 1e-2})
			if err != nil {
				t.Fatal(err)
			}
			defer opt.Close()
			in := tInput(t, d, tRand(64*16, 9, 1, f32), 64, 16)
			lv := make([]int32, 64)
			for i := range lv {
				lv[i] = int32(i % 4)
			}
			labels := tLabels(t, d, lv...)
			var out []float64
			for range 30 {
				g := nn.NewGraph(d, o)
				l := g.CrossEntropyLoss(m.Forward(g, g.Input(in)), labels, nn.Mean)
				if err := g.Backward(l, nil); err != nil {
					t.Fatal(err)
				}
				if err := opt.Step(); err != nil {
					t.Fatal(err)
				}
				if err := opt.ZeroGrad(); err != nil {
					t.Fatal(err)
				}
				out = append(out, float64(tRead(t, l.Value())[0]))
				g.Release()
			}
			return out
		}
		ref := losses(nn.Options{})
		got := losses(nn.Options{Autocast: bf16})
		if !(got[len(got)-1] < 0.5*got[0]) {
			t.Errorf("bf16 autocast: loss %v -> %v, want it at least halved", got[0], got[len(got)-1])
		}
		for i := range got {
			// bf16 keeps 8 bits: allow a few percent of the loss.
			if math.Abs(got[i]-ref[i]) > 0.05*ref[i]+0.02 {
				t.Errorf("step %d: bf16 loss %v, fp32 %v", i, got[i], ref[i])
			}
		}
		t.Logf("fp32 %.4f -> %.4f, bf16 %.4f -> %.4f", ref[0], ref[len(ref)-1], got[0], got[len(got)-1])
	})
}
