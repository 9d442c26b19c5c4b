package nn_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// targetNet is a classifier Linear(4, 8), ReLU, Linear(8, 3) with its
// optimizer and, when scaled, a GradScaler with fp16 autocast, trained on
// six fixed rows.
type targetNet struct {
	model nn.Sequential
	opt   interface {
		scaler.Optimizer
		ZeroGrad() error
		Steps() (int, error)
		Close() error
	}
	sc *scaler.Scaler // nil: plain Step, fp32
	x  *tensor.Tensor
}

func newTargetNet(t *testing.T, d *vk.Device, adam, scaled bool) *targetNet {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 7))
	m := &targetNet{model: nn.Sequential{nn.NewLinear(d, "fc1", 4, 8, rng), nn.ReLU{}, nn.NewLinear(d, "fc2", 8, 3, rng)}}
	t.Cleanup(func() { nn.Close(m.model) })
	var err error
	if adam {
		m.opt, err = nn.NewAdam(m.model.Parameters(), nn.AdamOptions{LR: 0.01})
	} else {
		m.opt, err = nn.NewSGD(m.model.Parameters(), nn.SGDOptions{LR: 0.1, Momentum: 0.9})
	}
	require.NoError(t, err)
	t.Cleanup(func() { m.opt.Close() })
	if scaled {
		m.sc, err = scaler.New(scaler.Options{InitScale: 1024})
		require.NoError(t, err)
		t.Cleanup(func() { m.sc.Close() })
	}
	m.x = tInput(t, d, random(rng, 6*4), 6, 4)
	return m
}

// step records one training step on labels and returns its graph, which
// the caller releases after reading the loss. It reads nothing.
func (m *targetNet) step(t *testing.T, labels []int32) (*nn.Graph, *nn.Var) {
	t.Helper()
	d := m.x.Device()
	y := tLabels(t, d, labels...)
	g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(m.sc != nil, tensor.Float16)})
	loss := g.CrossEntropyLoss(m.model.Forward(g, g.Input(m.x)), y, nn.Mean)
	tTrainStep(t, g, loss, m.opt, m.sc)
	return g, loss
}

func (m *targetNet) params(t *testing.T) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, p := range m.model.Parameters() {
		out = append(out, tRead(t, p.Value))
	}
	return out
}

// requireBadTarget checks that err is the device-side assert of NLL for
// target of row.
func requireBadTarget(t *testing.T, err error, row int, target int32) {
	t.Helper()
	require.ErrorIs(t, err, tensor.ErrBadTarget)
	var ae *tensor.AssertError
	require.True(t, errors.As(err, &ae), "%v is no *tensor.AssertError", err)
	require.Equal(t, "NLL", ae.Op)
	require.Equal(t, row, ae.Row)
	require.Equal(t, int64(target), ae.Value)
	require.Equal(t, 3, ae.Bound)
	require.Contains(t, err.Error(), fmt.Sprintf("row %d", row))
	require.Contains(t, err.Error(), fmt.Sprint(target))
}

// TestBadTargetSkipsStep: a training step whose labels hold one class index
// out of range, negative or C and above, leaves every parameter bit for bit
// as it was and does not count as a step, with a plain optimizer step and
// through a GradScaler (fp16 autocast); the next read of any tensor on the
// device returns a *tensor.AssertError naming NLL, the row and the target,
// and matching tensor.ErrBadTarget. The read clears it: the loss then reads
// NaN, and the next step with good labels trains.
func TestBadTargetSkipsStep(t *testing.T) {
	d := devtest.Open(t)
	good := []int32{0, 1, 2, 2, 1, 0}
	for _, bad := range []int32{-1, 3, 1 << 30, math.MinInt32} {
		for _, adam := range []bool{false, true} {
			for _, scaled := range []bool{false, true} {
				t.Run(fmt.Sprintf("target %d adam %v scaled %v", bad, adam, scaled), func(t *testing.T) {
					m := newTargetNet(t, d, adam, scaled)
					g, _ := m.step(t, good)
					g.Release()
					before := m.params(t)

					labels := append([]int32(nil), good...)
					labels[4] = bad
					g, loss := m.step(t, labels)
					defer g.Release()
					// The first read, of a parameter, reports the assert.
					_, err := m.model.Parameters()[0].Value.Float32s()
					requireBadTarget(t, err, 4, bad)
					v, err := loss.Value().Item()
					require.NoError(t, err, "a second read")
					require.True(t, math.IsNaN(float64(v)), "loss %g, want NaN", v)
					after := m.params(t)
					for i := range before {
						tSameBits(t, fmt.Sprintf("parameter %d", i), after[i], before[i])
					}
					steps, err := m.opt.Steps()
					require.NoError(t, err)
					require.Equal(t, 1, steps, "the bad step counted")

					g2, loss2 := m.step(t, good)
					defer g2.Release()
					v, err = loss2.Value().Item()
					require.NoError(t, err)
					require.False(t, math.IsNaN(float64(v)), "loss after the bad step")
					moved := m.params(t)
					require.NotEqual(t, tBits(before[0]), tBits(moved[0]), "a good step after the reported one did not train")
				})
			}
		}
	}
}

// TestBadTargetHoldsPlainSteps: until the assert is read, plain optimizer
// steps are skipped on the device, so a loop that reads nothing cannot
// train past a bad batch; tensor.Wait reports it too.
func TestBadTargetHoldsPlainSteps(t *testing.T) {
	d := devtest.Open(t)
	m := newTargetNet(t, d, false, false)
	before := m.params(t)
	g1, _ := m.step(t, []int32{0, 1, 2, 5, 1, 0})
	defer g1.Release()
	g2, _ := m.step(t, []int32{0, 1, 2, 2, 1, 0})
	defer g2.Release()
	requireBadTarget(t, tensor.Wait(d), 3, 5)
	require.NoError(t, tensor.Wait(d), "a second wait")
	after := m.params(t)
	for i := range before {
		tSameBits(t, fmt.Sprintf("parameter %d", i), after[i], before[i])
	}
	steps, err := m.opt.Steps()
	require.NoError(t, err)
	require.Equal(t, 0, steps)
}

// tTrainStep records a training step's backward of loss and opt's step:
// plain without a scaler, else scaled and stepped through sc, as
// PyTorch's AMP loop does. It reads nothing.
func tTrainStep(t *testing.T, g *nn.Graph, loss *nn.Var, opt interface {
	scaler.Optimizer
	ZeroGrad() error
}, sc *scaler.Scaler) {
	t.Helper()
	require.NoError(t, opt.ZeroGrad())
	if sc == nil {
		require.NoError(t, g.Backward(loss, nil))
		require.NoError(t, opt.Step())
		return
	}
	require.NoError(t, g.Backward(loss, sc.Seed(loss.Value())))
	_, err := sc.Step(opt)
	require.NoError(t, err)
	require.NoError(t, sc.Update())
}
