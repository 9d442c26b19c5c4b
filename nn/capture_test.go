package nn_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// capRun is one MLP trained with Adam (or SGD or Adadelta, newCapRunWith)
// and a scaler under AMP, with persistent input tensors per batch size, as
// a replayed step needs.
type capRun struct {
	d     *vk.Device
	amp   bool
	model nn.Sequential
	opt   capOptimizer
	sc    *scaler.Scaler
	x, y  map[int]*tensor.Tensor
}

// capOptimizer is what capRun needs of an optimizer.
type capOptimizer interface {
	scaler.DeviceSkipper
	ZeroGrad() error
	SetLR(float64) error
	Close() error
}

// capOptimizers make each optimizer a captured step may use.
var capOptimizers = map[string]func(ps []*nn.Param) (capOptimizer, error){
	"adam": func(ps []*nn.Param) (capOptimizer, error) { return nn.NewAdam(ps, nn.AdamOptions{LR: 0.01}) },
	"sgd": func(ps []*nn.Param) (capOptimizer, error) {
		return nn.NewSGD(ps, nn.SGDOptions{LR: 0.01, Momentum: 0.9})
	},
	"adadelta": func(ps []*nn.Param) (capOptimizer, error) { return nn.NewAdadelta(ps, nn.AdadeltaOptions{LR: 0.01}) },
}

const capIn, capHidden, capClasses = 20, 32, 5

func newCapRun(t *testing.T, d *vk.Device, amp bool) *capRun {
	t.Helper()
	return newCapRunWith(t, d, amp, "adam")
}

func newCapRunWith(t *testing.T, d *vk.Device, amp bool, optimizer string) *capRun {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	r := &capRun{d: d, amp: amp, x: map[int]*tensor.Tensor{}, y: map[int]*tensor.Tensor{}}
	r.model = nn.Sequential{nn.NewLinear(d, "fc1", capIn, capHidden, rng), nn.ReLU{}, nn.NewLinear(d, "fc2", capHidden, capClasses, rng)}
	var err error
	if r.opt, err = capOptimizers[optimizer](r.model.Parameters()); err != nil {
		t.Fatal(err)
	}
	if r.sc, err = scaler.New(scaler.Options{Disabled: !amp, InitScale: 1024, GrowthInterval: 3}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, x := range r.x {
			x.Release()
		}
		for _, y := range r.y {
			y.Release()
		}
		r.opt.Close()
		nn.Close(r.model)
	})
	return r
}

// batch is step i's data: n rows, the rows of step poison holding a value
// that overflows fp16.
func capBatch(i, n, poison int) ([]float32, []int32) {
	rng := rand.New(rand.NewPCG(uint64(i), 9))
	x := make([]float32, n*capIn)
	for j := range x {
		x[j] = float32(rng.NormFloat64())
	}
	if i == poison {
		x[3] = 1e6
	}
	y := make([]int32, n)
	for j := range y {
		y[j] = int32(rng.IntN(capClasses))
	}
	return x, y
}

// load writes step i's batch into the persistent inputs of its size.
func (r *capRun) load(t *testing.T, i, n, poison int) {
	t.Helper()
	if r.x[n] == nil {
		r.x[n], r.y[n] = tensor.New(r.d, tensor.Float32, n, capIn), tensor.New(r.d, tensor.Int32, n)
	}
	x, y := capBatch(i, n, poison)
	xb := make([]byte, 0, 4*len(x))
	for _, v := range x {
		xb = binary.LittleEndian.AppendUint32(xb, math.Float32bits(v))
	}
	yb := make([]byte, 0, 4*len(y))
	for _, v := range y {
		yb = binary.LittleEndian.AppendUint32(yb, uint32(v))
	}
	if err := r.x[n].SetBytes(xb); err != nil {
		t.Fatal(err)
	}
	if err := r.y[n].SetBytes(yb); err != nil {
		t.Fatal(err)
	}
}

// step is the training step, reading nothing back.
func (r *capRun) step(n int) error {
	g := nn.NewGraph(r.d, nn.Options{Autocast: nn.AutocastTo(r.amp, tensor.Float16)})
	defer g.Release()
	loss := g.CrossEntropyLoss(r.model.Forward(g, g.Input(r.x[n])), r.y[n], nn.Mean)
	if err := r.opt.ZeroGrad(); err != nil {
		return err
	}
	if err := g.Backward(loss, r.sc.Seed(loss.Value())); err != nil {
		return err
	}
	if _, err := r.sc.Step(r.opt); err != nil {
		return err
	}
	return r.sc.Update()
}

func (r *capRun) weights(t *testing.T) [][]byte {
	t.Helper()
	var out [][]byte
	for _, p := range r.model.Parameters() {
		b, err := p.Value.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestReplayedSteps trains the same MLP twice, each step recorded in one
// and replayed from a captured graph in the other, and checks that the
// weights (and the loss scale and the overflow count) agree bit for bit.
// The batches: full ones, a step that overflows fp16 (skipped under AMP),
// a partial batch (a new shape: recorded, not replayed), full ones again.
// The learning rate changes every step (SetLR, outside the step, as a
// schedule does): Adam reads it on the device, so the key leaves it out.
func TestReplayedSteps(t *testing.T) {
	sizes := []int{16, 16, 16, 16, 16, 16, 16, 7, 16, 16, 7, 7, 16}
	const poison = 4
	for _, c := range []struct {
		opt string
		amp bool
	}{{"adam", false}, {"adam", true}, {"sgd", true}, {"adadelta", true}} {
		amp := c.amp
		t.Run(fmt.Sprintf("%s/amp=%v", c.opt, amp), func(t *testing.T) {
			d := devtest.Open(t)
			rec, rep := newCapRunWith(t, d, amp, c.opt), newCapRunWith(t, d, amp, c.opt)
			rp := tensor.NewReplayer(d)
			t.Cleanup(func() { rp.Close() })
			for i, n := range sizes {
				lr := 0.01 * (1 + 0.25*float64(i%4))
				if err := errors.Join(rec.opt.SetLR(lr), rep.opt.SetLR(lr)); err != nil {
					t.Fatal(err)
				}
				rec.load(t, i, n, poison)
				if err := rec.step(n); err != nil {
					t.Fatalf("step %d recorded: %v", i, err)
				}
				rep.load(t, i, n, poison)
				if err := rp.Step(fmt.Sprint("batch ", n), func() error { return rep.step(n) }); err != nil {
					t.Fatalf("step %d replayed: %v", i, err)
				}
			}
			// 16: recorded, captured, then replayed; 7: recorded,
			// captured, replayed.
			if rp.Recorded != 2 || rp.Captured != 2 || rp.Replayed != len(sizes)-4 {
				t.Errorf("%d steps recorded, %d captured, %d replayed; want 2, 2, %d", rp.Recorded, rp.Captured, rp.Replayed, len(sizes)-4)
			}
			a, b := rec.weights(t), rep.weights(t)
			for i := range a {
				if !bytes.Equal(a[i], b[i]) {
					t.Errorf("parameter %d differs between recorded and replayed steps", i)
				}
			}
			s1, err1 := rec.sc.ScaleValue()
			s2, err2 := rep.sc.ScaleValue()
			o1, _ := rec.sc.Overflows()
			o2, _ := rep.sc.Overflows()
			if err1 != nil || err2 != nil || s1 != s2 || o1 != o2 {
				t.Errorf("scale %g (%v) and %g (%v), overflows %d and %d", s1, err1, s2, err2, o1, o2)
			}
			if amp && o1 != 1 {
				t.Errorf("%d steps overflowed, want the poisoned one", o1)
			}
		})
	}
}

// TestReplayMisuse checks that a host read inside a captured step, and a
// tensor of a graph released after its capture, are errors or a fresh
// capture, never a wrong result.
func TestReplayMisuse(t *testing.T) {
	d := devtest.Open(t)
	r := newCapRun(t, d, true)
	rp := tensor.NewReplayer(d)
	t.Cleanup(func() { rp.Close() })
	r.load(t, 0, 8, -1)
	reading := func() error {
		if err := r.step(8); err != nil {
			return err
		}
		_, err := r.model.Parameters()[0].Value.Bytes() // a host read
		return err
	}
	for i := range 3 {
		err := rp.Step("read", reading)
		if i == 0 && err != nil {
			t.Fatalf("recorded step: %v", err)
		}
		if i > 0 && !errors.Is(err, vk.ErrCapturing) {
			t.Errorf("step %d reading inside the capture: %v, want ErrCapturing", i, err)
		}
	}
	if rp.Graphs() != 0 {
		t.Errorf("%d graphs kept from refused captures", rp.Graphs())
	}
	// Setting the learning rate inside a step, before its ops use it, is a
	// host write the traced work comes after, as recorded work would: the
	// step runs at that rate, replayed or not.
	for i := range 3 {
		err := rp.Step("lr", func() error {
			if err := r.opt.SetLR(0.001 * float64(i+1)); err != nil {
				return err
			}
			return r.step(8)
		})
		if err != nil {
			t.Errorf("SetLR inside step %d: %v", i, err)
		}
	}
	if err := r.opt.SetLR(0.01); err != nil {
		t.Fatalf("SetLR after the steps: %v", err)
	}
	// Releasing an input of a graph: the next step captures again.
	ok := func() error { return r.step(8) }
	for range 3 {
		if err := rp.Step("ok", ok); err != nil {
			t.Fatal(err)
		}
	}
	r.x[8].Release()
	r.x[8] = nil
	r.load(t, 1, 8, -1)
	recorded, captured := rp.Recorded, rp.Captured
	for range 2 {
		if err := rp.Step("ok", ok); err != nil {
			t.Fatal(err)
		}
	}
	// Its graph is dropped (it binds a freed tensor) and the step captured
	// afresh, then replayed.
	if rp.Recorded != recorded || rp.Captured != captured+1 || rp.Graphs() != 2 {
		t.Errorf("after releasing a graph's input: %d recorded, %d captured, %d graphs; want 0, 1, 2 (lr's and ok's)", rp.Recorded-recorded, rp.Captured-captured, rp.Graphs())
	}
}

// TestReplayPanic checks that a step panicking while it is captured leaves
// no capture open: the device records and reads normally afterwards.
func TestReplayPanic(t *testing.T) {
	d := devtest.Open(t)
	rp := tensor.NewReplayer(d)
	t.Cleanup(func() { rp.Close() })
	a := tensor.FromFloat32(d, []float32{1, 2, 3}, 3)
	b := tensor.FromFloat32(d, []float32{1, 2}, 2)
	defer a.Release()
	defer b.Release()
	calls := 0
	step := func() error {
		calls++
		if calls == 2 {
			tensor.Add(a, b, tensor.Float32).Release() // a shape mismatch: panics
		}
		return nil
	}
	rp.Step("p", step)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("no panic from a mismatched Add")
			}
		}()
		rp.Step("p", step)
	}()
	c := tensor.Add(a, a, tensor.Float32)
	defer c.Release()
	if v, err := c.Float32s(); err != nil || v[2] != 6 {
		t.Errorf("after the panic: %v, %v", v, err)
	}
}
