// Package reliability_test holds the library's reliability tests: bad input
// across the public API, injected device faults during training, memory over
// long runs, and one device shared by several goroutines.
package reliability_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// deviceWorks fails t unless d still computes: a small Add read back.
func deviceWorks(t testing.TB, d *vk.Device) {
	t.Helper()
	a := tensor.FromFloat32(d, []float32{1, 2, 3}, 3)
	b := tensor.FromFloat32(d, []float32{4, 5, 6}, 3)
	c := tensor.Add(a, b, tensor.Float32)
	defer a.Release()
	defer b.Release()
	defer c.Release()
	got, err := c.Float32s()
	if err != nil {
		t.Fatalf("the device no longer works: %v", err)
	}
	if got[0] != 5 || got[1] != 7 || got[2] != 9 {
		t.Fatalf("the device no longer computes: 1+4, 2+5, 3+6 gave %v", got)
	}
}

// read waits for x and returns its values.
func read(t testing.TB, x *tensor.Tensor) []float32 {
	t.Helper()
	v, err := x.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// readParams returns the values of every parameter.
func readParams(t testing.TB, ps []*nn.Param) [][]float32 {
	t.Helper()
	out := make([][]float32, len(ps))
	for i, p := range ps {
		out[i] = read(t, p.Value)
	}
	return out
}

// sameBits fails t unless got and want are bit for bit equal.
func sameBits(t testing.TB, what string, got, want [][]float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d parameters, want %d", what, len(got), len(want))
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%s: parameter %d has %d elements, want %d", what, i, len(got[i]), len(want[i]))
		}
		for j := range want[i] {
			if math.Float32bits(got[i][j]) != math.Float32bits(want[i][j]) {
				t.Fatalf("%s: parameter %d element %d is %g, want %g", what, i, j, got[i][j], want[i][j])
			}
		}
	}
}

func random(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// tiny is a small regression problem: Linear(8, 4) with MSE, SGD and a
// loss scaler, on fixed data.
type tiny struct {
	model *nn.Linear
	opt   *nn.SGD
	sc    *scaler.Scaler
	x, y  *tensor.Tensor
	amp   bool
}

// newTiny builds the problem on d from seed; everything is released when
// the test ends.
func newTiny(t testing.TB, d *vk.Device, seed uint64, amp bool) *tiny {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	m := &tiny{model: nn.NewLinear(d, "fc", 8, 4, rng), amp: amp}
	t.Cleanup(func() { nn.Close(m.model) })
	var err error
	if m.opt, err = nn.NewSGD(m.model.Parameters(), nn.SGDOptions{LR: 0.01, Momentum: 0.9}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.opt.Close() })
	if m.sc, err = scaler.New(scaler.Options{Disabled: !amp, InitScale: 1024, GrowthInterval: 50}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.sc.Close() })
	m.x = tensor.FromFloat32(d, random(rng, 16*8), 16, 8)
	m.y = tensor.FromFloat32(d, random(rng, 16*4), 16, 4)
	t.Cleanup(m.x.Release)
	t.Cleanup(m.y.Release)
	return m
}

// step runs one training step in a graph of its own and returns the graph,
// which the caller releases, and the loss.
func (m *tiny) step() (*nn.Graph, *nn.Var, scaler.Skipped, error) {
	d := m.x.Device()
	g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(m.amp, tensor.Float16)})
	loss := g.MSELoss(m.model.Forward(g, g.Input(m.x)), g.Input(m.y), nn.Mean)
	if err := m.opt.ZeroGrad(); err != nil {
		return g, loss, scaler.Skipped{}, err
	}
	if err := g.Backward(loss, m.sc.Seed(loss.Value())); err != nil {
		return g, loss, scaler.Skipped{}, err
	}
	skipped, err := m.sc.Step(m.opt)
	if err != nil {
		return g, loss, skipped, err
	}
	return g, loss, skipped, m.sc.Update()
}
