package nn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// mathPanic runs f and checks that it panics with an error of type T whose
// message contains every one of parts.
func mathPanic[T error](t *testing.T, what string, f func(), parts ...string) {
	t.Helper()
	var got any
	func() {
		defer func() { got = recover() }()
		f()
	}()
	err, ok := got.(error)
	var want T
	if !ok || !errors.As(err, &want) {
		t.Errorf("%s: panic value %T %v, want %T", what, got, got, want)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %q does not mention %q", what, err.Error(), p)
		}
	}
}

// TestMathMisuse: shapes that do not broadcast, Int32 where a float is
// needed and bad axes panic with typed errors naming the op, and the graph
// stays usable after.
func TestMathMisuse(t *testing.T) {
	d := devtest.Open(t)
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	x := g.Input(tInput(t, d, make([]float32, 6), 2, 3))
	y := g.Input(tInput(t, d, make([]float32, 12), 4, 3))
	ints := tLabels(t, d, 1, 0, 1)
	mask23 := tensor.FromInt32(d, make([]int32, 6), 2, 3)
	t.Cleanup(mask23.Release)
	for _, c := range []struct {
		name string
		f    func(a, b *nn.Var) *nn.Var
	}{{"Add", g.Add}, {"Sub", g.Sub}, {"Mul", g.Mul}, {"Div", g.Div}} {
		mathPanic[*tensor.ShapeError](t, c.name, func() { c.f(x, y) }, c.name, "[2 3]", "[4 3]", "broadcast")
	}
	mathPanic[*tensor.ShapeError](t, "Where", func() { g.Where(ints, x, y) }, "Where", "[2 3]", "[4 3]")
	mathPanic[*tensor.DTypeError](t, "Where float cond", func() { g.Where(x.Value(), x, x) }, "Where", "int32 condition")
	small := g.Input(tInput(t, d, make([]float32, 3), 3))
	mathPanic[*tensor.ShapeError](t, "MaskedFill", func() { g.MaskedFill(small, mask23, 0) }, "MaskedFill", "[3]", "[2 3]")
	mathPanic[*tensor.DTypeError](t, "MaskedFill float mask", func() { g.MaskedFill(x, x.Value(), 0) }, "MaskedFill", "int32 mask")
	iv := g.Input(ints)
	for _, c := range []struct {
		name string
		f    func(*nn.Var) *nn.Var
	}{{"Log", g.Log}, {"Sqrt", g.Sqrt}, {"Tanh", g.Tanh}, {"Neg", g.Neg}, {"Sigmoid", g.Sigmoid}, {"Rsqrt", g.Rsqrt}} {
		mathPanic[*tensor.DTypeError](t, c.name+" of int32", func() { c.f(iv) }, c.name, "int32")
	}
	mathPanic[*tensor.DTypeError](t, "SumAxes of int32", func() { g.SumAxes(iv, nil, false) }, "SumAxes", "int32")
	mathPanic[*tensor.UsageError](t, "SumAxes axis 2", func() { g.SumAxes(x, []int{2}, false) }, "SumAxes", "axis 2", "[2 3]")
	mathPanic[*tensor.UsageError](t, "MaxAxes axis -3", func() { g.MaxAxes(x, []int{-3}, true) }, "MaxAxes", "axis -3")
	mathPanic[*tensor.UsageError](t, "MinAxes twice", func() { g.MinAxes(x, []int{0, -2}, true) }, "MinAxes", "twice")
	mathPanic[*tensor.UsageError](t, "MeanAxes axis 5", func() { g.MeanAxes(x, []int{5}, true) }, "MeanAxes", "axis 5")
	mathPanic[*tensor.DTypeError](t, "CumSum of int32", func() { g.CumSum(iv, 0) }, "CumSum", "int32")
	mathPanic[*tensor.UsageError](t, "CumSum axis 2", func() { g.CumSum(x, 2) }, "CumSum", "axis 2", "[2 3]")
	// The graph is still usable.
	if s := g.CumSum(x, -1).Shape(); len(s) != 2 || s[0] != 2 || s[1] != 3 {
		t.Errorf("CumSum after the panics: shape %v, want [2 3]", s)
	}
	if s := g.SumAxes(g.Add(x, small), []int{0}, false).Shape(); len(s) != 1 || s[0] != 3 {
		t.Errorf("SumAxes after the panics: shape %v, want [3]", s)
	}
}
