package nn_test

import (
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
)

var _ nn.Seeder = (*scaler.Scaler)(nil)

// loss.Backward() and loss.Scaled(sc).Backward() give the gradients of the
// explicit forms, bit for bit; loss.Item() the loss.
func TestVarBackward(t *testing.T) {
	d := devtest.Open(t)
	w := tParam(t, d, "w", tRand(12, 1, 1, f32), 3, 4)
	x := tInput(t, d, tRand(8, 2, 1, f32), 2, 4)
	sc, err := scaler.New(scaler.Options{InitScale: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	grad := func(f func(g *nn.Graph, loss *nn.Var) error) ([]float32, float64) {
		t.Helper()
		if err := w.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16})
		defer g.Release()
		loss := g.Sum(g.Linear(g.Input(x), g.Param(w), nil))
		if err := f(g, loss); err != nil {
			t.Fatal(err)
		}
		v, err := loss.Item()
		if err != nil {
			t.Fatal(err)
		}
		return tRead(t, w.Grad), v
	}
	explicit, v1 := grad(func(g *nn.Graph, loss *nn.Var) error { return g.Backward(loss, nil) })
	short, v2 := grad(func(_ *nn.Graph, loss *nn.Var) error { return loss.Backward() })
	tSameBits(t, "loss.Backward()", short, explicit)
	if v1 != v2 {
		t.Errorf("Item %g and %g", v1, v2)
	}
	explicitScaled, _ := grad(func(g *nn.Graph, loss *nn.Var) error { return g.Backward(loss, sc.Seed(loss.Value())) })
	scaled, _ := grad(func(_ *nn.Graph, loss *nn.Var) error { return loss.Scaled(sc).Backward() })
	tSameBits(t, "loss.Scaled(sc).Backward()", scaled, explicitScaled)
	if explicit[1]*256 != scaled[1] {
		t.Errorf("scaled gradient %g, want 256 * %g", scaled[1], explicit[1])
	}
	viaScaler, _ := grad(func(_ *nn.Graph, loss *nn.Var) error { return sc.ScaleLoss(loss).Backward() })
	tSameBits(t, "sc.ScaleLoss(loss).Backward()", viaScaler, explicitScaled)
	tPanics(t, "zero ScaledLoss", func() { nn.ScaledLoss{}.Backward() })
	tPanics(t, "zero scaler.ScaledLoss", func() { scaler.ScaledLoss{}.Backward() })
}
