package nn_test

import (
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// engineLoss records loss = sum(x * c + x) for a parameter x, whose gradient
// is c + 1 (exact in fp32 for the values used).
func engineLoss(t *testing.T, d *vk.Device, g *nn.Graph, p *nn.Param) *nn.Var {
	t.Helper()
	x := g.Param(p)
	c := g.Input(tInput(t, d, []float32{1, -2, 0.5, 4, -0.25, 3}, 2, 3))
	return g.Sum(g.Add(g.Mul(x, c), x))
}

var engineGrad = []float32{2, -1, 1.5, 5, 0.75, 4}

// TestEngine runs the tests of Backward's contract on one device.
func TestEngine(t *testing.T) {
	d := devtest.Open(t)
	t.Run("NonScalarPanics", func(t *testing.T) { engineNonScalarPanics(t, d) })
	t.Run("WithoutGradientErrors", func(t *testing.T) { engineWithoutGradientErrors(t, d) })
	t.Run("GradientsAccumulate", func(t *testing.T) { engineGradientsAccumulate(t, d) })
	t.Run("Seed", func(t *testing.T) { engineSeed(t, d) })
	t.Run("VarOfAnotherGraphPanics", func(t *testing.T) { engineVarOfAnotherGraphPanics(t, d) })
}

func engineNonScalarPanics(t *testing.T, d *vk.Device) {
	p := tParam(t, d, "x", make([]float32, 6), 2, 3)
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	y := g.Scale(g.Param(p), 2)
	msg := tPanics(t, "Backward of a [2 3] var", func() { g.Backward(y, nil) })
	tContains(t, "Backward of a [2 3] var", msg, "Backward", "[2 3]")

	loss := g.Sum(y)
	seed := tensor.Full(d, f32, 1, 2)
	msg = tPanics(t, "Backward with a [2] seed", func() { g.Backward(loss, seed) })
	tContains(t, "Backward with a [2] seed", msg, "Backward", "seed")
}

func engineWithoutGradientErrors(t *testing.T, d *vk.Device) {
	p := tParam(t, d, "x", make([]float32, 6), 2, 3)
	g := nn.NewGraph(d, nn.Options{NoGrad: true})
	defer g.Release()
	loss := engineLoss(t, d, g, p)
	if err := g.Backward(loss, nil); err == nil {
		t.Error("Backward on a NoGrad graph: no error")
	}
	if v, err := loss.Value().Item(); err != nil || v != 0 {
		t.Errorf("NoGrad forward: %g, %v; want 0", v, err)
	}

	g2 := nn.NewGraph(d, nn.Options{})
	defer g2.Release()
	in := g2.Input(tInput(t, d, []float32{1, 2}, 2))
	if err := g2.Backward(g2.Sum(in), nil); err == nil {
		t.Error("Backward of a loss that depends on no parameter: no error")
	}
	tSameBits(t, "gradient after failed Backward", tRead(t, p.Grad), make([]float32, 6))
}

// Gradients accumulate into Param.Grad across Backward calls, of two graphs
// or twice of one graph made with RetainGraph, as PyTorch's backward with
// retain_graph; ZeroGrad zeroes them.
func engineGradientsAccumulate(t *testing.T, d *vk.Device) {
	p := tParam(t, d, "x", []float32{0.5, 1, -1, 2, 3, -4}, 2, 3)
	twice := make([]float32, len(engineGrad))
	for i, v := range engineGrad {
		twice[i] = 2 * v
	}
	backward := func(g *nn.Graph, loss *nn.Var) {
		t.Helper()
		if err := g.Backward(loss, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		g := nn.NewGraph(d, nn.Options{})
		backward(g, engineLoss(t, d, g, p))
		g.Release()
		if i == 0 {
			tSameBits(t, "after one Backward", tRead(t, p.Grad), engineGrad)
		}
	}
	tSameBits(t, "after Backward of two graphs", tRead(t, p.Grad), twice)

	if err := p.ZeroGrad(); err != nil {
		t.Fatal(err)
	}
	tSameBits(t, "after ZeroGrad", tRead(t, p.Grad), make([]float32, 6))

	g := nn.NewGraph(d, nn.Options{RetainGraph: true})
	defer g.Release()
	loss := engineLoss(t, d, g, p)
	backward(g, loss)
	backward(g, loss)
	tSameBits(t, "after Backward twice of one graph", tRead(t, p.Grad), twice)
}

// The seed is the gradient of the loss: a scaler's Seed gives the gradients
// of the scaled loss, and a seed of another dtype is converted.
func engineSeed(t *testing.T, d *vk.Device) {
	p := tParam(t, d, "x", []float32{0.5, 1, -1, 2, 3, -4}, 2, 3)
	s, err := scaler.New(scaler.Options{InitScale: 1024})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	scaled := make([]float32, len(engineGrad))
	for i, v := range engineGrad {
		scaled[i] = 1024 * v
	}
	for _, seed := range []func(loss *nn.Var) *tensor.Tensor{
		func(loss *nn.Var) *tensor.Tensor { return s.Seed(loss.Value()) },
		func(loss *nn.Var) *tensor.Tensor { return tensor.Full(d, f16, 1024, 1) },
	} {
		if err := p.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		g := nn.NewGraph(d, nn.Options{})
		loss := engineLoss(t, d, g, p)
		if err := g.Backward(loss, seed(loss)); err != nil {
			t.Fatal(err)
		}
		tSameBits(t, "gradient of the scaled loss", tRead(t, p.Grad), scaled)
		g.Release()
	}
}

// A Graph is not shared: vars of another graph are misuse.
func engineVarOfAnotherGraphPanics(t *testing.T, d *vk.Device) {
	p := tParam(t, d, "x", make([]float32, 6), 2, 3)
	g1, g2 := nn.NewGraph(d, nn.Options{}), nn.NewGraph(d, nn.Options{})
	defer g1.Release()
	defer g2.Release()
	x := g1.Scale(g1.Param(p), 2)
	msg := tPanics(t, "Add of vars of two graphs", func() { g2.Add(x, g2.Param(p)) })
	tContains(t, "Add of vars of two graphs", msg, "add", "another graph")
}
