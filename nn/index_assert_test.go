package nn_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// indexNet is a classifier of 3 classes over six rows picked by Int32
// indices from a table of 5 rows, in one of three forms: "embedding", the
// table [5, 3] looked up (its rows are the logits, so only the embedding's
// own gradient can tell a scaler of the bad index), "embedding+linear", a
// table [5, 4] then Linear(4, 3), and "gather", the table [6, 5] gathered
// along its rows by indices [6, 3], and "onehot", the indices one-hot
// encoded (tensor.OneHot, in dt) times the table [5, 3]: an embedding as a
// matmul. The table enters the graph cast to dt.
type indexNet struct {
	arch  string
	dt    tensor.DType
	table *nn.Param
	lin   *nn.Linear
	opt   interface {
		scaler.Optimizer
		ZeroGrad() error
		Steps() (int, error)
		Close() error
	}
	sc     *scaler.Scaler // nil: plain Step, no autocast
	shape  []int          // the indices' shape
	labels *tensor.Tensor
}

func newIndexNet(t *testing.T, d *vk.Device, arch string, dt tensor.DType, adam, scaled bool) *indexNet {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 9))
	m := &indexNet{arch: arch, dt: dt, shape: []int{6}}
	params := func() []*nn.Param { return nil }
	switch arch {
	case "embedding":
		m.table = nn.NewEmbedding(d, "emb", 5, 3, rng).W
	case "embedding+linear":
		m.table = nn.NewEmbedding(d, "emb", 5, 4, rng).W
		m.lin = nn.NewLinear(d, "fc", 4, 3, rng)
		params = m.lin.Parameters
	case "onehot":
		m.table = nn.NewParam(d, "table", random(rng, 5*3), 5, 3)
	case "gather":
		m.table = nn.NewParam(d, "table", random(rng, 6*5), 6, 5)
		m.shape = []int{6, 3}
	}
	ps := append([]*nn.Param{m.table}, params()...)
	t.Cleanup(func() {
		for _, p := range ps {
			p.Close()
		}
	})
	var err error
	if adam {
		m.opt, err = nn.NewAdam(ps, nn.AdamOptions{LR: 0.01})
	} else {
		m.opt, err = nn.NewSGD(ps, nn.SGDOptions{LR: 0.1, Momentum: 0.9})
	}
	require.NoError(t, err)
	t.Cleanup(func() { m.opt.Close() })
	if scaled {
		m.sc, err = scaler.New(scaler.Options{InitScale: 1024})
		require.NoError(t, err)
		t.Cleanup(func() { m.sc.Close() })
	}
	m.labels = tLabels(t, d, 0, 1, 2, 2, 1, 0)
	return m
}

func (m *indexNet) params() []*nn.Param {
	if m.lin == nil {
		return []*nn.Param{m.table}
	}
	return append([]*nn.Param{m.table}, m.lin.Parameters()...)
}

// good returns indices all in range: 6 (embedding) or 6x3 (gather).
func (m *indexNet) good() []int32 {
	idx := make([]int32, 0, 18)
	for i := range 6 * (len(m.shape)*2 - 1) {
		idx = append(idx, int32((i*3+1)%5))
	}
	return idx
}

// step records one training step on idx and returns its graph, which the
// caller releases after reading the loss. It reads nothing.
func (m *indexNet) step(t *testing.T, idx []int32) (*nn.Graph, *nn.Var) {
	t.Helper()
	d := m.labels.Device()
	ix := tensor.FromInt32(d, idx, m.shape...)
	t.Cleanup(ix.Release)
	g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(m.sc != nil, tensor.Float16)})
	w := g.Param(m.table)
	if m.dt != tensor.Float32 {
		w = g.Cast(w, m.dt)
	}
	var logits *nn.Var
	switch m.arch {
	case "gather":
		logits = g.Gather(w, 1, ix)
	case "onehot":
		oh := tensor.OneHot(ix, 5, m.dt)
		t.Cleanup(oh.Release)
		logits = g.MatMul(g.Input(oh), w, false, false)
	default:
		logits = g.Embedding(w, ix)
		if m.lin != nil {
			logits = m.lin.Forward(g, logits)
		}
	}
	loss := g.CrossEntropyLoss(logits, m.labels, nn.Mean)
	tTrainStep(t, g, loss, m.opt, m.sc)
	return g, loss
}

func (m *indexNet) read(t *testing.T) [][]float32 {
	t.Helper()
	var out [][]float32
	for _, p := range m.params() {
		out = append(out, tRead(t, p.Value))
	}
	return out
}

// requireBadIndex checks that err is the device-side assert of op for index
// value at row 4 of the table's 5 rows.
func requireBadIndex(t *testing.T, err error, op string, value int32) {
	t.Helper()
	require.ErrorIs(t, err, tensor.ErrBadIndex)
	var ae *tensor.AssertError
	require.True(t, errors.As(err, &ae), "%v is no *tensor.AssertError", err)
	require.Equal(t, tensor.AssertError{Op: op, Err: tensor.ErrBadIndex, Row: 4, Value: int64(value), Bound: 5}, *ae)
	require.Contains(t, err.Error(), fmt.Sprintf("row 4 has index %d, outside [0, 5)", value))
}

// TestBadIndexSkipsStep: a training step whose indices hold one out of
// range (negative, the table's length, the least int32), into an
// embedding, a gather or a one-hot encoding, over a table of fp32, fp16 or bf16, leaves every
// parameter bit for bit as it was and does not count as a step, with plain
// SGD and Adam steps and through a GradScaler (fp16 autocast); the next
// read returns a *tensor.AssertError naming the op, the index's position,
// the index and the bound, matching tensor.ErrBadIndex. The read clears it:
// the loss then reads NaN, and a step with good indices trains. The
// "embedding" form's only route to the scaler is the embedding's gradient.
func TestBadIndexSkipsStep(t *testing.T) {
	d := devtest.Open(t)
	for _, arch := range []string{"embedding", "embedding+linear", "gather", "onehot"} {
		op := map[string]string{"gather": "Gather", "onehot": "OneHot"}[arch]
		if op == "" {
			op = "Embedding"
		}
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float16, tensor.BFloat16} {
			for _, bad := range []int32{-1, 5, math.MinInt32} {
				for _, adam := range []bool{false, true} {
					for _, scaled := range []bool{false, true} {
						t.Run(fmt.Sprintf("%s %s index %d adam %v scaled %v", arch, dt, bad, adam, scaled), func(t *testing.T) {
							m := newIndexNet(t, d, arch, dt, adam, scaled)
							good := m.good()
							g, _ := m.step(t, good)
							g.Release()
							before := m.read(t)

							idx := slices.Clone(good)
							idx[4] = bad
							g, loss := m.step(t, idx)
							defer g.Release()
							_, err := m.table.Value.Float32s() // the first read reports it
							requireBadIndex(t, err, op, bad)
							v, err := loss.Value().Item()
							require.NoError(t, err, "a second read")
							require.True(t, math.IsNaN(float64(v)), "loss %g, want NaN", v)
							after := m.read(t)
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
							require.NotEqual(t, tBits(before[0]), tBits(m.read(t)[0]), "a good step after the reported one did not train the table")
						})
					}
				}
			}
		}
	}
}

// TestBadIndexHoldsPlainSteps: until the assert is read, plain optimizer
// steps are skipped on the device, so a loop that reads nothing cannot
// train past a bad batch; tensor.Wait reports it.
func TestBadIndexHoldsPlainSteps(t *testing.T) {
	d := devtest.Open(t)
	m := newIndexNet(t, d, "embedding+linear", tensor.Float32, false, false)
	before := m.read(t)
	idx := m.good()
	idx[4] = 7
	g1, _ := m.step(t, idx)
	defer g1.Release()
	g2, _ := m.step(t, m.good())
	defer g2.Release()
	err := tensor.Wait(d)
	require.ErrorIs(t, err, tensor.ErrBadIndex)
	require.Contains(t, err.Error(), "tensor: Embedding: device-side assert: row 4 has index 7, outside [0, 5)")
	require.NoError(t, tensor.Wait(d), "a second wait")
	after := m.read(t)
	for i := range before {
		tSameBits(t, fmt.Sprintf("parameter %d", i), after[i], before[i])
	}
	steps, err := m.opt.Steps()
	require.NoError(t, err)
	require.Equal(t, 0, steps)
}
