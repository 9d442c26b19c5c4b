package reliability_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkamp/vkamp/checkpoint"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
)

// The environment of TestBadInputs: a device, a tiny model, and helpers
// that corrupt files and misuse the API.

func setupEnv(t *testing.T) *env {
	e := &env{t: t, d: devtest.Open(t), other: devtest.Open(t), closed: devtest.Open(t)}
	e.onClosed = tensor.FromFloat32(e.closed, []float32{1, 2}, 2)
	if _, err := e.onClosed.Float32s(); err != nil {
		t.Fatal(err)
	}
	if err := e.closed.Close(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.onClosed.Release)

	// A checkpoint of one Linear(8, 4), and another to load it into.
	saved := nn.NewLinear(e.d, "fc", 8, 4, rand.New(rand.NewPCG(1, 1)))
	defer nn.Close(saved)
	savedOpt, err := nn.NewSGD(saved.Parameters(), nn.SGDOptions{LR: 0.5, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	defer savedOpt.Close()
	e.ckpt = t.TempDir()
	if err := nn.SaveCheckpoint(e.ckpt, saved.Parameters(), nil, savedOpt); err != nil {
		t.Fatal(err)
	}
	e.model = nn.NewLinear(e.d, "fc", 8, 4, rand.New(rand.NewPCG(2, 2)))
	t.Cleanup(func() { nn.Close(e.model) })
	if e.opt, err = nn.NewSGD(e.model.Parameters(), nn.SGDOptions{LR: 0.1, Momentum: 0.9}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.opt.Close() })

	// The device's assert record, made by its first loss and kept as long as
	// the device, exists before the rows count live buffers.
	warm := nn.NewGraph(e.d, nn.Options{NoGrad: true})
	labels := tensor.FromInt32(e.d, []int32{0}, 1)
	if _, err := warm.CrossEntropyLoss(warm.Input(e.z(1, 4)), labels, nn.Mean).Value().Item(); err != nil {
		t.Fatal(err)
	}
	labels.Release()
	warm.Release()
	e.scope.Release()

	// The pristine checkpoint loads: what the rows break is what fails.
	probe := nn.NewLinear(e.d, "fc", 8, 4, rand.New(rand.NewPCG(3, 3)))
	defer nn.Close(probe)
	probeOpt, err := nn.NewSGD(probe.Parameters(), nn.SGDOptions{LR: 0.1, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	defer probeOpt.Close()
	if _, err := nn.LoadCheckpoint(e.ckpt, probe.Parameters(), probeOpt); err != nil {
		t.Fatalf("the intact checkpoint does not load: %v", err)
	}
	sameBits(t, "intact checkpoint", readParams(t, probe.Parameters()), readParams(t, saved.Parameters()))
	return e
}

// loadCorrupt copies the checkpoint, breaks the copy with f, and loads it
// into e.model; a failed load must leave the parameters and the learning
// rate as they were.
func (e *env) loadCorrupt(f func(dir string) error) error {
	dir := e.t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(e.ckpt)); err != nil {
		e.t.Fatal(err)
	}
	if err := f(dir); err != nil {
		e.t.Fatal(err)
	}
	before, lr := readParams(e.t, e.model.Parameters()), e.opt.LR()
	_, err := nn.LoadCheckpoint(dir, e.model.Parameters(), e.opt)
	if err != nil {
		sameBits(e.t, "parameters after a failed load", readParams(e.t, e.model.Parameters()), before)
		if e.opt.LR() != lr {
			e.t.Errorf("a failed load changed the learning rate from %g to %g", lr, e.opt.LR())
		}
	}
	return err
}

// truncate cuts the file to n bytes (negative: that many fewer).
func truncate(path string, n int64) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if n < 0 {
		n += fi.Size()
	}
	return os.Truncate(path, n)
}

// editState rewrites the checkpoint's state.json through f, and the
// checksum LATEST records for it.
func editState(dir string, f func(m map[string]any)) error {
	path := filepath.Join(dir, "step-1", "state.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	f(m)
	if raw, err = json.Marshal(m); err != nil {
		return err
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "LATEST"), []byte("step-1\nstate.json "+checkpoint.Sum(raw)+"\n"), 0o644)
}

// optimizer0 returns the first optimizer's section of a state.json.
func optimizer0(m map[string]any) map[string]any {
	return m["optimizers"].([]any)[0].(map[string]any)
}

// loadScalerState loads data into a scaler that has device state, and
// checks that a failed load changed nothing.
func (e *env) loadScalerState(data string) error {
	sc, err := scaler.New(scaler.Options{InitScale: 512})
	if err != nil {
		e.t.Fatal(err)
	}
	defer sc.Close()
	one := e.keep(tensor.Full(e.d, tensor.Float32, 1, 1))
	e.keep(sc.Scale(one))
	before, err := sc.StateDict()
	if err != nil {
		e.t.Fatal(err)
	}
	err = sc.LoadStateDict([]byte(data))
	if err != nil {
		after, err2 := sc.StateDict()
		if err2 != nil || !bytes.Equal(after, before) {
			e.t.Errorf("a failed load changed the state from %s to %s (%v)", before, after, err2)
		}
	}
	return err
}

// idx returns an IDX stream: the magic, the dimensions and the body.
func idx(magic uint32, dims []uint32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, magic)
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, body...)
}

func readImages(b []byte) error {
	_, _, _, _, err := mnist.ReadImages(bytes.NewReader(b))
	return err
}

func readLabels(b []byte) error {
	_, err := mnist.ReadLabels(bytes.NewReader(b))
	return err
}

// misuse steps the scaler through a sequence on a fresh tiny model and
// returns the error of the last call.
func (e *env) misuse(seq func(m *tiny, backward func()) error) error {
	m := newTiny(e.t, e.d, 5, true)
	backward := func() {
		g := nn.NewGraph(e.d, nn.Options{Autocast: tensor.Float16})
		e.t.Cleanup(g.Release)
		loss := g.MSELoss(m.model.Forward(g, g.Input(m.x)), g.Input(m.y), nn.Mean)
		if err := m.opt.ZeroGrad(); err != nil {
			e.t.Fatal(err)
		}
		if err := g.Backward(loss, m.sc.Seed(loss.Value())); err != nil {
			e.t.Fatal(err)
		}
	}
	return seq(m, backward)
}

// fakeOpt is an optimizer the scaler can take, with the gradients a row
// gives it.
type fakeOpt struct{ grads []*tensor.Tensor }

func (o *fakeOpt) Gradients() []*tensor.Tensor { return o.grads }
func (o *fakeOpt) Step() error                 { return nil }

// valueOpt is an optimizer passed by value that holds a slice: the scaler
// cannot key it.
type valueOpt struct{ grads []*tensor.Tensor }

func (o valueOpt) Gradients() []*tensor.Tensor { return o.grads }
func (o valueOpt) Step() error                 { return nil }
