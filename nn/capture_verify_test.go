package nn_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestReplayerVerifies runs a step under one key of a Replayer fed in each
// way a replay of its graph would get wrong (a batch in a new tensor each
// step, in two tensors in turns, picked from tensors written before the
// capture, a host scalar that changes, a shape that changes) and one it
// gets right (one tensor written each step), with and without an
// optimizer step in the graph, and checks that the weights and gradients
// are those of the same steps recorded, bit for bit.
func TestReplayerVerifies(t *testing.T) {
	const steps = 7
	modes := []struct {
		name     string
		replayed bool // some steps replay
	}{{"one tensor", true}, {"new tensor each step", false}, {"two in turns", true},
		{"picked from earlier tensors", true}, {"host scalar", true}, {"shape", true}}
	for _, mode := range modes {
		for _, withOpt := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/optimizer=%v", mode.name, withOpt), func(t *testing.T) {
				d := devtest.Open(t)
				rec, rep := newVerifyRun(t, d, withOpt), newVerifyRun(t, d, withOpt)
				rp := tensor.NewReplayer(d)
				t.Cleanup(func() { rp.Close() })
				var live []*tensor.Tensor
				t.Cleanup(func() {
					for _, x := range live {
						x.Release()
					}
				})
				upload := func(i, n int) *tensor.Tensor {
					x := tensor.FromFloat32(d, verifyBatch(i, n), n, 6)
					live = append(live, x)
					return x
				}
				turns := []*tensor.Tensor{upload(0, 8), upload(1, 8)}
				earlier := []*tensor.Tensor{upload(10, 8), upload(11, 8), upload(12, 8)}
				bySize := map[int]*tensor.Tensor{8: upload(0, 8), 5: upload(0, 5)}
				for i := range steps {
					x, scale, n := turns[0], float32(1), 8
					switch mode.name {
					case "one tensor":
						x = turns[0]
						if err := x.SetFloat32s(verifyBatch(i, 8)); err != nil {
							t.Fatal(err)
						}
					case "new tensor each step":
						x = upload(i, 8)
					case "two in turns":
						x = turns[i%2]
						if err := x.SetFloat32s(verifyBatch(i, 8)); err != nil {
							t.Fatal(err)
						}
					case "picked from earlier tensors":
						x = earlier[i%3]
					case "host scalar":
						scale = float32(1 + i%3)
					case "shape":
						n = []int{8, 5}[i%2]
						x = bySize[n]
						if err := x.SetFloat32s(verifyBatch(i, n)); err != nil {
							t.Fatal(err)
						}
					}
					if err := rec.step(x, scale); err != nil {
						t.Fatalf("step %d recorded: %v", i, err)
					}
					if err := rp.Step("step", func() error { return rep.step(x, scale) }); err != nil {
						t.Fatalf("step %d under the Replayer: %v", i, err)
					}
				}
				for i, p := range rec.model.Parameters() {
					q := rep.model.Parameters()[i]
					for _, pair := range [][2]*tensor.Tensor{{p.Value, q.Value}, {p.Grad, q.Grad}} {
						a, errA := pair[0].Bytes()
						b, errB := pair[1].Bytes()
						if errA != nil || errB != nil || !bytes.Equal(a, b) {
							t.Errorf("%s differs from the recorded steps' (%v, %v)", p.Name, errA, errB)
						}
					}
				}
				if mode.replayed != (rp.Replayed > 0) {
					t.Errorf("%d steps replayed, %d recorded, %d captured, %d diverted (%s)", rp.Replayed, rp.Recorded, rp.Captured, rp.Diverted, rp.LastDiverted)
				}
			})
		}
	}
}

// verifyRun is a small model with its optimizer, if any.
type verifyRun struct {
	d     *vk.Device
	model nn.Sequential
	opt   *nn.SGD
}

func newVerifyRun(t *testing.T, d *vk.Device, withOpt bool) *verifyRun {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	r := &verifyRun{d: d, model: nn.Sequential{nn.NewLinear(d, "fc1", 6, 8, rng), nn.ReLU{}, nn.NewLinear(d, "fc2", 8, 3, rng)}}
	if withOpt {
		var err error
		if r.opt, err = nn.NewSGD(r.model.Parameters(), nn.SGDOptions{LR: 0.1, Momentum: 0.9}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.opt.Close() })
	}
	t.Cleanup(func() { nn.Close(r.model) })
	return r
}

// step is forward, backward of the scaled sum of squares, and an SGD step
// if the run has one (else the gradients add up over the steps).
func (r *verifyRun) step(x *tensor.Tensor, scale float32) error {
	g := nn.NewGraph(r.d, nn.Options{})
	defer g.Release()
	y := r.model.Forward(g, g.Input(x))
	loss := g.Scale(g.Sum(g.Mul(y, y)), scale)
	if r.opt != nil {
		if err := r.opt.ZeroGrad(); err != nil {
			return err
		}
	}
	if err := loss.Backward(); err != nil {
		return err
	}
	if r.opt != nil {
		return r.opt.Step()
	}
	return nil
}

// verifyBatch is step i's batch of n rows of 6.
func verifyBatch(i, n int) []float32 {
	rng := rand.New(rand.NewPCG(uint64(i), 11))
	x := make([]float32, n*6)
	for j := range x {
		x[j] = float32(rng.NormFloat64())
	}
	return x
}
