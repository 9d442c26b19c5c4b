package nn_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Tests of Param and of how the optimizers hold parameters: setting
// weights after a step, a Value or Grad replaced by another tensor, the
// same parameter listed twice, bad layer sizes.

// paramStep sets p's gradient to g through a graph (the gradient of
// sum(p * g)) and steps opt.
func paramStep(t *testing.T, d *vk.Device, opt interface{ Step() error }, p *nn.Param, g []float32) error {
	t.Helper()
	if err := p.ZeroGrad(); err != nil {
		t.Fatal(err)
	}
	gr := nn.NewGraph(d, nn.Options{})
	defer gr.Release()
	if err := gr.Backward(gr.Sum(gr.Mul(gr.Param(p), gr.Input(tInput(t, d, g, len(g))))), nil); err != nil {
		t.Fatal(err)
	}
	return opt.Step()
}

// TestParamSet: Set after a step copies new weights into the tensor the
// optimizer updates, which then trains from them.
func TestParamSet(t *testing.T) {
	d := devtest.Open(t)
	p := tParam(t, d, "w", []float32{1, 2, 3, 4}, 4)
	opt, err := nn.NewSGD([]*nn.Param{p}, nn.SGDOptions{LR: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer opt.Close()
	g := []float32{1, -1, 2, 0}
	if err := paramStep(t, d, opt, p, g); err != nil {
		t.Fatal(err)
	}
	value := p.Value
	if err := p.Set(tInput(t, d, []float32{10, 20, 30, 40}, 4)); err != nil {
		t.Fatal(err)
	}
	if p.Value != value {
		t.Fatal("Set replaced the value tensor")
	}
	if err := paramStep(t, d, opt, p, g); err != nil {
		t.Fatal(err)
	}
	tSameBits(t, "after Set and a step", tRead(t, p.Value), []float32{9.5, 20.5, 29, 40})

	// fp16 values are converted; a wrong shape is a typed panic naming the
	// parameter.
	h := tensor.Cast(tInput(t, d, []float32{0.5, 1.5, -2, 3}, 4), tensor.Float16)
	defer h.Release()
	if err := p.Set(h); err != nil {
		t.Fatal(err)
	}
	tSameBits(t, "after Set from fp16", tRead(t, p.Value), []float32{0.5, 1.5, -2, 3})
	err = p.Set(tInput(t, d, []float32{1, 2}, 2))
	var se *tensor.ShapeError
	if !errors.As(err, &se) {
		t.Fatalf("Set of another shape: %v, want a *tensor.ShapeError", err)
	}
	tContains(t, "Set of another shape", err.Error(), "w", "[4]", "[2]")
	tSameBits(t, "after a refused Set", tRead(t, p.Value), []float32{0.5, 1.5, -2, 3})
}

// TestParamReplaced: a Value or Grad replaced by another tensor after a
// step, the old one released, is what the optimizer updates from then on:
// the memory the old one freed, now another tensor's, is not written, and
// the new weight trains. A replacement of another shape is an error naming
// the parameter.
func TestParamReplaced(t *testing.T) {
	d := devtest.Open(t)
	for _, adam := range []bool{false, true} {
		p := tParam(t, d, "fc.weight", []float32{1, 2, 3, 4}, 4)
		q := tParam(t, d, "fc.bias", []float32{5, 6}, 2)
		var opt interface {
			Step() error
			Close() error
		}
		var err error
		if adam {
			opt, err = nn.NewAdam([]*nn.Param{p, q}, nn.AdamOptions{LR: 0.5})
		} else {
			opt, err = nn.NewSGD([]*nn.Param{p, q}, nn.SGDOptions{LR: 0.5, Momentum: 0.5})
		}
		if err != nil {
			t.Fatal(err)
		}
		g := []float32{1, -1, 2, 0}
		if err := paramStep(t, d, opt, p, g); err != nil {
			t.Fatal(err)
		}
		old := p.Value
		p.Value = tensor.FromFloat32(d, []float32{10, 20, 30, 40}, 4)
		t.Cleanup(p.Value.Release)
		old.Release()
		other := tInput(t, d, []float32{7, 7, 7, 7}, 4) // likely in the memory old freed
		if err := paramStep(t, d, opt, p, g); err != nil {
			t.Fatalf("adam %v: step after the value was replaced: %v", adam, err)
		}
		tSameBits(t, "the unrelated tensor", tRead(t, other), []float32{7, 7, 7, 7})
		got := tRead(t, p.Value)
		for i, v := range got {
			if want := []float32{10, 20, 30, 40}[i]; (g[i] == 0) != (v == want) {
				t.Errorf("adam %v: replaced value[%d] = %g from %g with gradient %g: did not train", adam, i, v, want, g[i])
			}
		}

		// A new gradient tensor is the one the step reads.
		oldGrad := p.Grad
		p.Grad = tensor.Zeros(d, tensor.Float32, 4)
		t.Cleanup(p.Grad.Release)
		oldGrad.Release()
		before := tRead(t, p.Value)
		if err := paramStep(t, d, opt, p, []float32{0, 0, 0, 4}); err != nil {
			t.Fatal(err)
		}
		if after := tRead(t, p.Value); after[3] == before[3] {
			t.Errorf("adam %v: the gradient in the replaced Grad was not used", adam)
		}

		// Another shape cannot keep the moments: an error naming it, and
		// nothing stepped.
		p.Value = tensor.FromFloat32(d, []float32{1, 2, 3}, 3)
		t.Cleanup(p.Value.Release)
		if err := q.Grad.SetBytes([]byte{0, 0, 0x80, 0x3f, 0, 0, 0x80, 0x3f}); err != nil { // 1, 1
			t.Fatal(err)
		}
		qv := tRead(t, q.Value)
		err = opt.Step()
		tContains(t, "a value of another shape", errString(err), "fc.weight", "[3]", "[4]", "Param.Set")
		tSameBits(t, "the other parameter after a refused step", tRead(t, q.Value), qv)
		opt.Close()
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestOptimizerDuplicateParam: a parameter listed twice would be stepped
// twice per step; two parameters sharing a tensor likewise.
func TestOptimizerDuplicateParam(t *testing.T) {
	d := devtest.Open(t)
	p := tParam(t, d, "fc1.weight", []float32{1, 2}, 2)
	q := tParam(t, d, "fc1.bias", []float32{3}, 1)
	_, err := nn.NewSGD([]*nn.Param{p, q, p}, nn.SGDOptions{LR: 0.1})
	tContains(t, "SGD", errString(err), "fc1.weight", "twice")
	_, err = nn.NewAdam([]*nn.Param{q, p, q}, nn.AdamOptions{LR: 0.1})
	tContains(t, "Adam", errString(err), "fc1.bias", "twice")
	alias := &nn.Param{Name: "tied", Value: p.Value, Grad: tensor.Zeros(d, tensor.Float32, 2)}
	t.Cleanup(alias.Grad.Release)
	_, err = nn.NewSGD([]*nn.Param{p, alias}, nn.SGDOptions{LR: 0.1})
	tContains(t, "shared value", errString(err), "fc1.weight", "tied", "value")
}

// TestLayerSizes: a layer of a size below 1 is a typed panic naming the
// layer and its sizes, not a runtime error from make.
func TestLayerSizes(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		what string
		f    func()
		want []string
	}{
		{"NewLinear in -3", func() { nn.NewLinear(d, "x", -3, 4, rng) }, []string{"NewLinear", `"x"`, "in -3, out 4", "at least 1"}},
		{"NewLinear out 0", func() { nn.NewLinear(d, "y", 3, 0, rng) }, []string{"NewLinear", `"y"`, "in 3, out 0"}},
		{"NewLinear over 2^31", func() { nn.NewLinear(d, "z", 1<<16, 1<<16, rng) }, []string{"NewLinear", `"z"`, "65536", "2^31"}},
		{"NewLinear nil rng", func() { nn.NewLinear(d, "r", 3, 4, nil) }, []string{"NewLinear", `"r"`, "rng"}},
		{"NewLayerNorm -1", func() { nn.NewLayerNorm(d, "ln", -1) }, []string{"NewLayerNorm", `"ln"`, "features -1"}},
	} {
		func() {
			defer func() {
				r := recover()
				e, ok := r.(*tensor.UsageError)
				if !ok {
					t.Errorf("%s: panicked with %T (%v), want *tensor.UsageError", c.what, r, r)
					return
				}
				tContains(t, c.what, e.Error(), c.want...)
			}()
			c.f()
		}()
	}
}

// TestLinearOverBindingRange: a layer whose weight is over the device's
// maxStorageBufferRange (an fp32 Linear(8192, 8192) is 256 MiB; lavapipe
// binds at most 128 MiB) is refused at construction: the weight carries an
// error naming it and the limit, which the optimizer's constructor returns.
// No weight is drawn or written. Where the allocation limit is as low
// (SwiftShader: 1 GiB for both), the error names that limit.
func TestLinearOverBindingRange(t *testing.T) {
	d := devtest.Open(t)
	lim := int64(d.Info().MaxStorageBufferRange)
	out := 8192
	if 4*8192*8192 <= lim { // a device that binds more: the smallest layer over it
		out = int(lim/(4*8192) + 1)
	}
	l := nn.NewLinear(d, "big", 8192, out, rand.New(rand.NewPCG(1, 2)))
	defer nn.Close(l)
	limit := fmt.Sprintf("maxStorageBufferRange of %d bytes", lim)
	if uint64(4*8192*out) > d.Info().MaxMemoryAllocationSize { // SwiftShader: 1 GiB for both; that limit is said first
		limit = fmt.Sprintf("at most %d in one allocation", d.Info().MaxMemoryAllocationSize)
	}
	tContains(t, "W.Err", errString(l.W.Err()), "big.weight", limit)
	if err := l.B.Err(); err != nil {
		t.Errorf("the bias fits, but: %v", err)
	}
	opt, err := nn.NewAdam(l.Parameters(), nn.AdamOptions{LR: 1e-3})
	if err == nil {
		opt.Close()
	}
	tContains(t, "NewAdam", errString(err), "big.weight", limit)
	t.Logf("NewAdam: %v", err)
}

// TestParamReplacedShape: a Value replaced by a tensor of the same size and
// another shape is refused where a graph first uses it, naming the
// parameter, rather than in backward.
func TestParamReplacedShape(t *testing.T) {
	d := devtest.Open(t)
	p := tParam(t, d, "fc.weight", []float32{1, 2, 3, 4}, 2, 2)
	old := p.Value
	p.Value = tensor.FromFloat32(d, []float32{1, 2, 3, 4}, 4)
	t.Cleanup(p.Value.Release)
	old.Release()
	g := nn.NewGraph(d, nn.Options{})
	defer g.Release()
	msg := tPanics(t, "Param of a replaced shape", func() { g.Param(p) })
	tContains(t, "Param of a replaced shape", msg, "fc.weight", "[4]", "[2 2]")
	p.Frozen = true // a frozen parameter has no gradient to match
	g.Param(p)
}
