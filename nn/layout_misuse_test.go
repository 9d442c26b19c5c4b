package nn_test

import (
	"errors"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// Misuse of the layout ops, softmax along an axis and batched MatMul in a
// graph panics with the tensor package's typed values, naming the op and
// the shapes; on a released graph, with a *tensor.UsageError.
func TestLayoutMisuse(t *testing.T) {
	d := devtest.Open(t)
	xt := tInput(t, d, tRand(6, 1, 1, f32), 2, 3)
	yt := tInput(t, d, tRand(18, 2, 1, f32), 3, 2, 3)
	zt := tInput(t, d, tRand(24, 3, 1, f32), 2, 3, 4)
	ix := tLabels(t, d, 0, 1)

	g := nn.NewGraph(d, nn.Options{Autocast: tensor.Float16})
	defer g.Release()
	x, y, z := g.Input(xt), g.Input(yt), g.Input(zt)
	shape := func(what string, f func(), parts ...string) {
		t.Helper()
		var got any
		func() {
			defer func() { got = recover() }()
			f()
		}()
		var se *tensor.ShapeError
		if err, ok := got.(error); !ok || !errors.As(err, &se) {
			t.Errorf("%s: panic value %T %v, want a *tensor.ShapeError", what, got, got)
			return
		}
		tContains(t, what, se.Error(), parts...)
	}
	shape("batch dims", func() { g.MatMul(y, z, false, false) }, "MatMul", "[3 2 3]", "[2 3 4]", "do not broadcast")
	shape("concat shapes", func() { g.Concat(1, x, y) }, "Concat", "[2 3]", "[3 2 3]")
	shape("gather rank", func() { g.Gather(x, 0, ix) }, "Gather", "[2 3]", "[2]")
	tContains(t, "permute", tUsagePanic(t, "permute", "Permute", func() { g.Permute(x, 0, 0) }), "twice")
	tContains(t, "transpose", tUsagePanic(t, "transpose", "Transpose", func() { g.Transpose(x, 0, 2) }), "axis 2")
	tContains(t, "narrow", tUsagePanic(t, "narrow", "Narrow", func() { g.Narrow(x, 1, 1, 3) }), "length 3")
	tContains(t, "stack", tUsagePanic(t, "stack", "Stack", func() { g.Stack(3, x, x) }), "axis 3")
	tContains(t, "concat none", tUsagePanic(t, "concat none", "cat", func() { g.Concat(0) }), "no tensors")
	tContains(t, "softmax", tUsagePanic(t, "softmax", "SoftmaxAxis", func() { g.Softmax(x, 2) }), "axis 2")

	r := nn.NewGraph(d, nn.Options{})
	rx := r.Input(xt)
	r.Release()
	for _, c := range []struct {
		op string
		f  func()
	}{
		{"Permute", func() { r.Permute(rx, 1, 0) }},
		{"Transpose", func() { r.Transpose(rx, 0, 1) }},
		{"Narrow", func() { r.Narrow(rx, 0, 0, 1) }},
		{"Concat", func() { r.Concat(0, rx, rx) }},
		{"Stack", func() { r.Stack(0, rx, rx) }},
		{"Gather", func() { r.Gather(rx, 0, ix) }},
	} {
		tContains(t, c.op+" released", tUsagePanic(t, c.op+" released", c.op, c.f), "released")
	}
}
