package nn_test

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// TestTo: a model converted to fp16 or bf16 (module.half(), bfloat16())
// runs in that dtype without autocast and gives the fp32 model's output
// within the dtype's rounding; its parameters are frozen without
// gradients, BatchNorm's int32 count stays int32, an optimizer refuses the
// converted weights, unfreezing them without a gradient is a typed panic,
// and an int32 target dtype panics.
func TestTo(t *testing.T) {
	d := devtest.Open(t)
	for _, dt := range []tensor.DType{f16, tensor.BFloat16} {
		t.Run(dt.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			bn := nn.NewBatchNorm2d(d, "bn", 4)
			bn.SetTraining(false)
			m := nn.Sequential{nn.NewLinear(d, "fc1", 6, 16, rng), nn.ReLU{}, nn.NewLinear(d, "fc2", 16, 4, rng)}
			defer nn.Close(m)
			defer nn.Close(bn)
			x := tInput(t, d, tRand(3*6, 5, 1, f32), 3, 6)
			run := func() ([]float32, tensor.DType) {
				g := nn.NewGraph(d, nn.Options{NoGrad: true})
				defer g.Release()
				in := g.Input(x)
				if dt32 := m.Parameters()[0].Value.DType(); dt32 != f32 {
					in = g.Cast(in, dt32)
				}
				y := m.Forward(g, in)
				return tRead(t, y.Value()), y.DType()
			}
			want, _ := run()
			if err := nn.To(m, dt); err != nil {
				t.Fatal(err)
			}
			if err := nn.To(bn, dt); err != nil {
				t.Fatal(err)
			}
			got, gotDT := run()
			if gotDT != dt {
				t.Errorf("output in %s, want %s", gotDT, dt)
			}
			ref.Check(t, "output", got, to64(want), tMaxScale(to64(want)), 4*ref.Unit(dt))
			for _, p := range append(m.Parameters(), bn.Parameters()...) {
				if p.Value.DType() != dt || !p.Frozen || p.Grad != nil {
					t.Errorf("%s: %s, frozen %v, grad %v after To", p.Name, p.Value.DType(), p.Frozen, p.Grad != nil)
				}
			}
			for _, b := range nn.Buffers(bn) {
				if want := map[bool]tensor.DType{true: tensor.Int32, false: dt}[b.Name == "bn.num_batches_tracked"]; b.Value.DType() != want {
					t.Errorf("buffer %s: %s, want %s", b.Name, b.Value.DType(), want)
				}
			}
			if _, err := nn.NewAdam(m.Parameters(), nn.AdamOptions{LR: 1e-3}); err == nil {
				t.Error("an Adam over converted weights: no error")
			}
			nn.Unfreeze(m)
			g := nn.NewGraph(d, nn.Options{})
			defer g.Release()
			func() {
				defer func() {
					err, _ := recover().(error)
					var u *tensor.UsageError
					if !errors.As(err, &u) {
						t.Errorf("a converted weight unfrozen: panic %v, want a *tensor.UsageError", err)
					}
				}()
				m.Forward(g, g.Input(tensor.Cast(x, dt)))
			}()
		})
	}
	func() {
		defer func() {
			if _, ok := recover().(*tensor.UsageError); !ok {
				t.Error("To Int32: no *tensor.UsageError")
			}
		}()
		nn.To(nn.Sequential{}, tensor.Int32)
	}()
}
