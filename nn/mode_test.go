package nn_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/vk"
)

// block is a model that is a struct of layers, reached through Children.
type block struct {
	fc   *nn.Linear
	drop *nn.Dropout
	rest nn.Sequential
}

func (b *block) Forward(g *nn.Graph, x *nn.Var) *nn.Var {
	return b.rest.Forward(g, b.drop.Forward(g, b.fc.Forward(g, x)))
}

func (b *block) Parameters() []*nn.Param {
	return append(b.fc.Parameters(), b.rest.Parameters()...)
}

func (b *block) Children() []nn.Module { return []nn.Module{b.fc, b.drop, b.rest} }

func newBlock(d *vk.Device, rng *rand.Rand) (*block, []*nn.Dropout) {
	inner := &nn.Dropout{P: 0.5}
	b := &block{fc: nn.NewLinear(d, "fc", 4, 4, rng), drop: &nn.Dropout{P: 0.5},
		rest: nn.Sequential{nn.Sequential{inner}, nn.ReLU{}}}
	return b, []*nn.Dropout{b.drop, inner}
}

func TestTrainEval(t *testing.T) {
	d := devtest.Open(t)
	b, drops := newBlock(d, rand.New(rand.NewPCG(1, 2)))
	defer nn.Close(b)
	model := nn.Sequential{b, b} // shared: visited once
	nn.Train(model)
	for i, dr := range drops {
		if !dr.Training {
			t.Errorf("dropout %d not training after Train", i)
		}
	}
	nn.Eval(model)
	for i, dr := range drops {
		if dr.Training {
			t.Errorf("dropout %d still training after Eval", i)
		}
	}
	// In evaluation the model is deterministic: no dropout.
	x := tInput(t, d, tRand(8, 3, 1, f32), 2, 4)
	var outs [][]float32
	for range 2 {
		g := nn.NewGraph(d, nn.Options{NoGrad: true})
		outs = append(outs, tRead(t, model.Forward(g, g.Input(x)).Value()))
		g.Release()
	}
	tSameBits(t, "two evaluations", outs[1], outs[0])
	nn.Eval(nn.Sequential{(*nn.Dropout)(nil), nil}) // nil modules are skipped
}

func TestFreeze(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(1, 2))
	model := nn.Sequential{nn.NewLinear(d, "fc1", 4, 3, rng), nn.NewLinear(d, "fc2", 3, 2, rng)}
	defer nn.Close(model)
	ps := model.Parameters()
	opt, err := nn.NewAdamGroups(nn.DecayGroups(ps, 0.1), nn.AdamOptions{LR: 0.1, Decoupled: true})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	x := tInput(t, d, tRand(8, 3, 1, f32), 2, 4)
	backward := func() {
		t.Helper()
		if err := opt.ZeroGrad(); err != nil {
			t.Fatal(err)
		}
		g := nn.NewGraph(d, nn.Options{})
		defer g.Release()
		if err := g.Backward(g.Sum(model.Forward(g, g.Input(x))), nil); err != nil {
			t.Fatal(err)
		}
	}
	nn.Freeze(model[0])
	backward()
	for _, p := range ps {
		zero := true
		for _, v := range tRead(t, p.Grad) {
			zero = zero && v == 0
		}
		if zero != p.Frozen {
			t.Errorf("%s (frozen %v): gradient all zero %v", p.Name, p.Frozen, zero)
		}
	}
	// The norm leaves out the frozen parameters, even with gradients.
	if err := ps[0].Grad.CopyFrom(tInput(t, d, make([]float32, 12), 3, 4)); err != nil {
		t.Fatal(err)
	}
	var trainable [][]float32
	for _, p := range ps[2:] {
		trainable = append(trainable, tRead(t, p.Grad))
	}
	norm, err := nn.ClipGradNorm(ps, 1e9)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ref.ClipNorm(trainable, 1e9, 1e-6)
	ref.Check(t, "norm of the trainable gradients", tRead(t, norm), []float64{want}, nil, 1e-5)
	norm.Release()

	before := snapshot(t, opt, ps)
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	m1, m2 := nn.Moments(opt)
	for i, p := range ps {
		same := slices.Equal(tBits(tRead(t, p.Value)), tBits(before.values[i]))
		if same != p.Frozen {
			t.Errorf("%s (frozen %v): value unchanged by the step %v", p.Name, p.Frozen, same)
		}
	}
	// Moments are in the groups' order: fc1.weight fc2.weight, then biases.
	for i, name := range []string{"fc1.weight", "fc2.weight", "fc1.bias", "fc2.bias"} {
		frozen := name[:3] == "fc1"
		zero := true
		for _, m := range [][]float32{tRead(t, m1[i]), tRead(t, m2[i])} {
			for _, v := range m {
				zero = zero && v == 0
			}
		}
		if zero != frozen {
			t.Errorf("%s: moments zero %v, frozen %v", name, zero, frozen)
		}
	}
	// Unfrozen, it trains again.
	nn.Unfreeze(model)
	backward()
	w := tRead(t, ps[0].Value)
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(tBits(tRead(t, ps[0].Value)), tBits(w)) {
		t.Error("fc1.weight unchanged after Unfreeze and a step")
	}
	// All frozen: a norm of 0, and a step that touches nothing.
	nn.Freeze(model)
	norm, err = nn.ClipGradNorm(ps, 1)
	if err != nil {
		t.Fatal(err)
	}
	if v := tRead(t, norm); v[0] != 0 {
		t.Errorf("norm with everything frozen %g; want 0", v[0])
	}
	norm.Release()
	before = snapshot(t, opt, ps)
	if err := opt.Step(); err != nil {
		t.Fatal(err)
	}
	now := snapshot(t, opt, ps)
	for i := range before.values {
		tSameBits(t, "step with everything frozen", now.values[i], before.values[i])
	}
}
