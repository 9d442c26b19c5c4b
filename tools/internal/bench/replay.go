package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// ReplayReport is what ReplayPerDispatch measured: the fastest sample.
type ReplayReport struct {
	Replay     time.Duration // host time of one replayed step (tensor.Replayer.Step)
	Load       time.Duration // host time writing its batch into the input tensors
	Record     time.Duration // host time of the same step recorded, fastest sample
	RecordLoad time.Duration // host time writing that sample's data
	Dispatches int           // kernel launches the replayed step runs
	Samples    int
}

// PerDispatch is the host time of a replayed step over its dispatches.
func (r ReplayReport) PerDispatch() time.Duration {
	return r.Replay / time.Duration(max(r.Dispatches, 1))
}

// replayable is a training step that can be captured: load writes step
// i's data into tensors that outlive the step, and step records the step
// reading them.
type replayable interface {
	load(i int) error
	step() error
	close()
}

// replayMLP is the MNIST MLP 784-256-10 with Adam and a loss scaler (fp16
// AMP), trained from input tensors that stay alive between steps, as a
// captured step needs: the trainer's step uploads its batch inside the step.
type replayMLP struct {
	d     *vk.Device
	model nn.Sequential
	opt   *nn.Adam
	sc    *scaler.Scaler
	x, y  *tensor.Tensor
	yb    []byte
	train *mnist.Set
}

func newReplayMLP(d *vk.Device, train *mnist.Set, batch int) (*replayMLP, error) {
	rng := rand.New(rand.NewPCG(1, 1))
	pixels := train.Rows * train.Cols
	m := &replayMLP{d: d, train: train, model: nn.Sequential{
		nn.NewLinear(d, "fc1", pixels, 256, rng), nn.ReLU{}, nn.NewLinear(d, "fc2", 256, 10, rng)}}
	var err error
	if m.opt, err = nn.NewAdam(m.model.Parameters(), nn.AdamOptions{LR: 1e-3}); err != nil {
		nn.Close(m.model)
		return nil, err
	}
	if m.sc, err = scaler.New(scaler.Options{}); err != nil {
		m.close()
		return nil, err
	}
	m.x, m.y = tensor.New(d, tensor.Float32, batch, pixels), tensor.New(d, tensor.Int32, batch)
	return m, errors.Join(m.x.Err(), m.y.Err())
}

func (m *replayMLP) close() {
	m.x.Release()
	m.y.Release()
	m.opt.Close()
	nn.Close(m.model)
}

// load writes batch i of the training set (wrapping around) into the
// input tensors, the rows copied straight into x's memory (or its
// upload's), as the trainer's host gather does.
func (m *replayMLP) load(i int) error {
	s := m.train
	n, px := m.y.Len(), s.Rows*s.Cols
	errX := m.x.WriteFloat32s(func(dst []float32) {
		for j := range n {
			k := (i*n + j) % s.N
			copy(dst[j*px:(j+1)*px], s.Images[k*px:(k+1)*px])
		}
	})
	m.yb = m.yb[:0]
	for j := range n {
		m.yb = binary.LittleEndian.AppendUint32(m.yb, uint32(s.Labels[(i*n+j)%s.N]))
	}
	return errors.Join(errX, m.y.SetBytes(m.yb))
}

// step is the trainer's AMP step on the persistent inputs, reading nothing.
func (m *replayMLP) step() error {
	g := nn.NewGraph(m.d, nn.Options{Autocast: tensor.Float16})
	defer g.Release()
	loss := g.CrossEntropyLoss(m.model.Forward(g, g.Input(m.x)), m.y, nn.Mean)
	if err := m.opt.ZeroGrad(); err != nil {
		return err
	}
	if err := g.Backward(loss, m.sc.Seed(loss.Value())); err != nil {
		return err
	}
	if _, err := m.sc.Step(m.opt); err != nil {
		return err
	}
	return m.sc.Update()
}

// ReplayPerDispatch measures the host time of a replayed AMP training step
// of the MNIST MLP at batch (replayPerDispatch).
func ReplayPerDispatch(d *vk.Device, train *mnist.Set, batch, steps int) (ReplayReport, error) {
	if batch < 1 || steps < 1 {
		return ReplayReport{}, fmt.Errorf("bench: batch %d and steps %d must be positive", batch, steps)
	}
	m, err := newReplayMLP(d, train, batch)
	if err != nil {
		return ReplayReport{}, err
	}
	defer m.close()
	return replayPerDispatch(d, m, steps)
}

// replayPerDispatch measures the host time of m's step replayed: the step
// is recorded, captured and then replayed by a tensor.Replayer; each of
// steps samples starts on a drained device with its data written, and
// times the Step call alone. The same step recorded op by op is timed the
// same way for comparison. The fastest samples are kept.
func replayPerDispatch(d *vk.Device, m replayable, steps int) (ReplayReport, error) {
	rp := tensor.NewReplayer(d)
	defer rp.Close()
	r := ReplayReport{Samples: steps}
	timed := func(i int, run func() error) (load, host time.Duration, err error) {
		if err := d.Wait(); err != nil {
			return 0, 0, err
		}
		t0 := time.Now()
		if err := m.load(i); err != nil {
			return 0, 0, err
		}
		t1 := time.Now()
		err = run()
		return t1.Sub(t0), time.Since(t1), err
	}
	// Recorded steps first, then replayed ones: a batch's command pool is
	// reset when it is next used, and the reset of a recorded step's
	// commands is not the replay's cost. The warm-up replays go round the
	// ring of command buffers once.
	const key, warm = "step", 6
	for i := range warm + steps {
		load, host, err := timed(i, m.step)
		if err != nil {
			return ReplayReport{}, err
		}
		if i >= warm && (r.Record == 0 || host < r.Record) {
			r.Record, r.RecordLoad = host, load
		}
	}
	for i := range warm + steps {
		load, host, err := timed(i, func() error { return rp.Step(key, m.step) })
		if err != nil {
			return ReplayReport{}, err
		}
		if i >= warm && (r.Replay == 0 || host < r.Replay) {
			r.Replay, r.Load = host, load
		}
	}
	if want := warm + steps - 2; rp.Replayed != want {
		return ReplayReport{}, fmt.Errorf("bench: %d of %d steps replayed", rp.Replayed, want)
	}
	r.Dispatches = rp.Dispatches(key)
	return r, d.Wait()
}

// Replay measures the host time per dispatch of a replayed AMP step at
// batch (ReplayPerDispatch over steps samples): dispatch/replay-us.
func Replay(d *vk.Device, train *mnist.Set, batch, steps int) ([]Result, error) {
	r, err := ReplayPerDispatch(d, train, batch, steps)
	if err != nil {
		return nil, err
	}
	return replayResults(d, r, "", fmt.Sprintf("a captured AMP step (batch %d, MNIST MLP)", batch), "the batch"), nil
}

// replayResults are dispatch/replay-us and dispatch/replay-vs-record (each
// name followed by suffix) of r, the replay of the step what, whose data
// (wrote) is written before each.
func replayResults(d *vk.Device, r ReplayReport, suffix, what, wrote string) []Result {
	us := func(t time.Duration) float64 { return float64(t) / 1e3 }
	return onDevice(d, []Result{
		{Name: "dispatch/replay-us" + suffix, Value: us(r.PerDispatch()), Unit: "us per dispatch",
			Detail: fmt.Sprintf("host time replaying %s on a drained device, %.3g us, over its %d dispatches; writing %s took %.3g us more; the same step recorded took %.3g us; fastest of %d steps",
				what, us(r.Replay), r.Dispatches, wrote, us(r.Load), us(r.Record), r.Samples)},
		{Name: "dispatch/replay-vs-record" + suffix, Value: float64(r.Record) / float64(max(r.Replay, 1)), Unit: "x",
			Detail: "host time of the recorded step over that of the replayed step, same run"},
	})
}
