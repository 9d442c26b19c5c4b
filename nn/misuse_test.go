package nn_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestGraphMisuse checks that misuse of a Graph panics with a
// *tensor.UsageError naming the op, rather than computing nothing, wrong
// gradients or dropping autocast in silence.
func TestGraphMisuse(t *testing.T) {
	d := devtest.Open(t)
	t.Run("BackwardOnReleased", func(t *testing.T) { misuseBackwardOnReleased(t, d) })
	t.Run("BackwardOfAnotherGraph", func(t *testing.T) { misuseBackwardOfAnotherGraph(t, d) })
	t.Run("OpsOnReleased", func(t *testing.T) { misuseOpsOnReleased(t, d) })
	t.Run("BackwardTwice", func(t *testing.T) { misuseBackwardTwice(t, d) })
	t.Run("TwoGoroutines", func(t *testing.T) { misuseTwoGoroutines(t, d) })
}

// tUsagePanic runs f and returns the message of its panic, failing t unless
// the panic value is a *tensor.UsageError for op.
func tUsagePanic(t testing.TB, what, op string, f func()) string {
	t.Helper()
	var got any
	func() {
		defer func() { got = recover() }()
		f()
	}()
	var ue *tensor.UsageError
	if err, ok := got.(error); !ok || !errors.As(err, &ue) {
		t.Errorf("%s: panic value %T %v, want a *tensor.UsageError", what, got, got)
		return ""
	}
	if ue.Op != op {
		t.Errorf("%s: UsageError for op %q, want %q (%v)", what, ue.Op, op, ue)
	}
	return ue.Error()
}

// Backward of a released graph used to return nil having computed nothing.
func misuseBackwardOnReleased(t *testing.T, d *vk.Device) {
	p := tParam(t, d, "x", []float32{0.5, 1, -1, 2, 3, -4}, 2, 3)
	g := nn.NewGraph(d, nn.Options{})
	loss := engineLoss(t, d, g, p)
	g.Release()
	msg := tUsagePanic(t, "Backward of a released graph", "Backward", func() { g.Backward(loss, nil) })
	tContains(t, "Backward of a released graph", msg, "released")
	tSameBits(t, "gradient after Backward of a released graph", tRead(t, p.Grad), make([]float32, 6))
	g.Release() // Release stays idempotent
}

// Backward of another graph's loss used to return nil having computed
// nothing.
func misuseBackwardOfAnotherGraph(t *testing.T, d *vk.Device) {
	p := tParam(t, d, "x", []float32{0.5, 1, -1, 2, 3, -4}, 2, 3)
	g1, g2 := nn.NewGraph(d, nn.Options{}), nn.NewGraph(d, nn.Options{})
	defer g1.Release()
	defer g2.Release()
	loss := engineLoss(t, d, g1, p)
	engineLoss(t, d, g2, p)
	msg := tUsagePanic(t, "Backward of another graph's loss", "Backward", func() { g2.Backward(loss, nil) })
	tContains(t, "Backward of another graph's loss", msg, "another graph")
	tSameBits(t, "gradient after Backward of another graph's loss", tRead(t, p.Grad), make([]float32, 6))

	msg = tUsagePanic(t, "Backward of a nil loss", "Backward", func() { g2.Backward(nil, nil) })
	tContains(t, "Backward of a nil loss", msg, "nil")
}

// Every op of a released graph panics naming the op: they used to run with
// autocast off and record into a graph nothing would free.
func misuseOpsOnReleased(t *testing.T, d *vk.Device) {
	p := tParam(t, d, "w", tRand(12, 1, 1, f32), 4, 3)
	b := tParam(t, d, "b", tRand(4, 2, 1, f32), 4)
	gamma := tParam(t, d, "gamma", tRand(3, 3, 1, f32), 3)
	xt := tInput(t, d, tRand(6, 4, 1, f32), 2, 3)
	labels := tInput(t, d, []float32{0, 2}, 2)

	g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16})
	x, w, bias, ga := g.Input(xt), g.Param(p), g.Param(b), g.Param(gamma)
	g.Release()
	cases := []struct {
		op string
		f  func()
	}{
		{"Input", func() { g.Input(xt) }},
		{"Param", func() { g.Param(p) }},
		{"Cast", func() { g.Cast(x, f16) }},
		{"MatMul", func() { g.MatMul(x, w, false, true) }},
		{"Linear", func() { g.Linear(x, w, bias) }},
		{"Add", func() { g.Add(x, x) }},
		{"Sub", func() { g.Sub(x, x) }},
		{"Mul", func() { g.Mul(x, x) }},
		{"AddBias", func() { g.AddBias(x, ga) }},
		{"Scale", func() { g.Scale(x, 2) }},
		{"ReLU", func() { g.ReLU(x) }},
		{"GELU", func() { g.GELU(x) }},
		{"GELUTanh", func() { g.GELUTanh(x) }},
		{"Sum", func() { g.Sum(x) }},
		{"Mean", func() { g.Mean(x) }},
		{"Softmax", func() { g.Softmax(x, -1) }},
		{"LogSoftmax", func() { g.LogSoftmax(x, -1) }},
		{"Dropout", func() { g.Dropout(x, 0.5) }},
		{"MSELoss", func() { g.MSELoss(x, x, nn.Mean) }},
		{"CrossEntropyLoss", func() { g.CrossEntropyLoss(x, labels, nn.Mean) }},
		{"LayerNorm", func() { g.LayerNorm(x, ga, ga, 1e-5) }},
		{"WithAutocast", func() { g.WithAutocast(false, func() {}) }},
	}
	for i, c := range cases {
		msg := tUsagePanic(t, c.op+" on a released graph", c.op, c.f)
		tContains(t, c.op+" on a released graph", msg, "released")
		if t.Failed() {
			t.Logf("case %d (%s)", i, c.op)
		}
	}
}

// A second Backward of one graph used to add the same gradients again.
func misuseBackwardTwice(t *testing.T, d *vk.Device) {
	p := tParam(t, d, "x", []float32{0.5, 1, -1, 2, 3, -4}, 2, 3)
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	loss := engineLoss(t, d, g, p)
	if err := g.Backward(loss, nil); err != nil {
		t.Fatal(err)
	}
	msg := tUsagePanic(t, "Backward twice", "Backward", func() { g.Backward(loss, nil) })
	tContains(t, "Backward twice", msg, "RetainGraph")
	tSameBits(t, "gradient after Backward twice", tRead(t, p.Grad), engineGrad)
}

// Two goroutines recording into one graph at once used to give wrong,
// varying gradients. Now one of them panics: each hammers the graph until
// either has panicked, recovering the panic in the goroutine.
func misuseTwoGoroutines(t *testing.T, d *vk.Device) {
	p := tParam(t, d, "x", []float32{0.5, 1, -1, 2, 3, -4}, 2, 3)
	c := tInput(t, d, []float32{1, -2, 0.5, 4, -0.25, 3}, 2, 3)
	g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16})
	defer g.Release()

	var (
		mu     sync.Mutex
		caught []any
		wg     sync.WaitGroup
		stop   = make(chan struct{})
		once   sync.Once
	)
	deadline := time.Now().Add(30 * time.Second)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				select {
				case <-stop:
					return
				default:
				}
				func() {
					defer func() {
						if r := recover(); r != nil {
							mu.Lock()
							caught = append(caught, r)
							mu.Unlock()
							once.Do(func() { close(stop) })
						}
					}()
					x := g.Param(p)
					g.Sum(g.Mul(g.Add(x, g.Input(c)), x))
				}()
			}
		}()
	}
	wg.Wait()
	if len(caught) == 0 {
		t.Fatal("two goroutines used one graph for 30 s without a panic")
	}
	for i, r := range caught {
		err, ok := r.(error)
		var ue *tensor.UsageError
		if !ok || !errors.As(err, &ue) {
			t.Errorf("panic %d: %T %v, want a *tensor.UsageError", i, r, r)
			continue
		}
		tContains(t, "two goroutines", ue.Error(), "one goroutine")
	}
	t.Logf("%d panics, the first: %v", len(caught), caught[0])
}
