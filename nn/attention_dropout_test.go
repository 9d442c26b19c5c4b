package nn_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// attnLoss runs attention on qkv (fused, or composed with dropout p) and
// returns sum(y * w) and the gradient of qkv, in fp32 or under fp16
// autocast, with the graph's dropout seeds fixed.
func attnLoss(t *testing.T, d *vk.Device, qkv, w []float32, fused, amp bool, p float32) (float64, []float32) {
	t.Helper()
	const batch, tt, c, heads = 2, 8, 16, 2
	x := tParam(t, d, "qkv", qkv, batch*tt, 3*c)
	g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(amp, tensor.Float16), Seeds: nn.NewSeedSource(5)})
	defer g.Release()
	var y *nn.Var
	if fused {
		y = g.CausalSelfAttention(g.Param(x), batch, heads)
	} else {
		y = nn.ComposedAttention(g, g.Param(x), batch, heads, p)
	}
	if s := y.Shape(); len(s) != 2 || s[0] != batch*tt || s[1] != c {
		t.Fatalf("attention output %v, want [%d %d]", s, batch*tt, c)
	}
	loss := g.Sum(g.Mul(g.Cast(y, f32), g.Input(tInput(t, d, w, batch*tt, c))))
	v, err := loss.Item()
	if err != nil {
		t.Fatal(err)
	}
	if err := loss.Backward(); err != nil {
		t.Fatal(err)
	}
	return v, tRead(t, x.Grad)
}

// TestComposedAttention: attention built from graph ops (nanoGPT's manual
// path, which the GPU recipe's attention dropout needs) equals the fused
// kernels without dropout, forward and backward, in fp32 and fp16 AMP;
// with dropout its gradient matches central differences of the same
// dropped graph (the mask is fixed by the seed), and it differs from the
// undropped output.
func TestComposedAttention(t *testing.T) {
	d := devtest.Open(t)
	qkv := tRand(16*48, 7, 1, f32)
	w := tRand(16*16, 8, 1, f32)
	for _, amp := range []bool{false, true} {
		lf, gf := attnLoss(t, d, qkv, w, true, amp, 0)
		lc, gc := attnLoss(t, d, qkv, w, false, amp, 0)
		tol := 1e-5
		if amp {
			tol = 2e-2 // the composed path rounds the scores and probabilities to fp16 between ops
		}
		if math.Abs(lf-lc) > tol*(1+math.Abs(lf)) {
			t.Errorf("amp %v: loss fused %v, composed %v", amp, lf, lc)
		}
		worst := 0.0
		for i := range gf {
			worst = max(worst, math.Abs(float64(gf[i]-gc[i])))
		}
		if worst > tol*4 {
			t.Errorf("amp %v: gradients differ by up to %g", amp, worst)
		}
		t.Logf("amp %v: loss %.6f / %.6f, gradient difference %.3g", amp, lf, lc, worst)
	}

	const p = 0.5
	l0, g0 := attnLoss(t, d, qkv, w, false, false, p)
	lf, _ := attnLoss(t, d, qkv, w, true, false, 0)
	if l0 == lf {
		t.Errorf("dropout %g left the loss at %v", p, l0)
	}
	if l1, _ := attnLoss(t, d, qkv, w, false, false, p); l1 != l0 {
		t.Errorf("the same seeds gave losses %v and %v", l0, l1)
	}
	const eps = 1e-2
	for _, i := range []int{3, 100, 200, 371, 500, 700} {
		plus, minus := append([]float32(nil), qkv...), append([]float32(nil), qkv...)
		plus[i] += eps
		minus[i] -= eps
		lp, _ := attnLoss(t, d, plus, w, false, false, p)
		lm, _ := attnLoss(t, d, minus, w, false, false, p)
		fd := (lp - lm) / (2 * eps)
		if math.Abs(fd-float64(g0[i])) > 2e-3*(1+math.Abs(fd)) {
			t.Errorf("qkv[%d]: gradient %g, central difference %g", i, g0[i], fd)
		}
	}
}

// TestAttentionDropoutModule: a block's attention drops probabilities
// only while training; in evaluation it is the fused op's output.
func TestAttentionDropoutModule(t *testing.T) {
	d := devtest.Open(t)
	a := nn.NewCausalSelfAttention(d, "attn", nn.BlockOptions{Dim: 16, Heads: 2, Dropout: 0.2}, rand.New(rand.NewPCG(3, 3)))
	if a.AttnDropout.P != 0.2 {
		t.Fatalf("AttnDropout %+v, want P 0.2", a.AttnDropout)
	}
	x := tInput(t, d, tRand(16*16, 9, 1, f32), 16, 16)
	run := func(training bool) []float32 {
		a.SetTraining(training)
		g := nn.NewGraph(d, nn.Options{NoGrad: true, Seeds: nn.NewSeedSource(1)})
		defer g.Release()
		return tRead(t, a.Forward(g, g.Input(x), 2).Value())
	}
	ev, tr := run(false), run(true)
	a.Dropout.P = 0 // the residual dropout off: what still differs is attention's
	tr2 := run(true)
	same := func(a, b []float32) bool {
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	if same(ev, tr) || same(ev, tr2) {
		t.Error("training with attention dropout 0.2 gave the evaluation output")
	}
	if !same(ev, run(false)) {
		t.Error("evaluation is not repeatable")
	}
}
