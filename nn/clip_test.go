package nn_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// clipParams returns parameters of optShapes with gradients gs (seeded by
// seed, scaled by scale) set directly, and those gradients.
func clipParams(t *testing.T, d *vk.Device, seed uint64, scale float32) ([]*nn.Param, [][]float32) {
	t.Helper()
	ps, _ := optParams(t, d)
	var gs [][]float32
	for i, p := range ps {
		g := tRand(p.Grad.Len(), seed+uint64(i), scale, f32)
		if err := p.Grad.CopyFrom(tInput(t, d, g, p.Grad.Shape()...)); err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	return ps, gs
}

func TestClipGrad(t *testing.T) {
	d := devtest.Open(t)
	t.Run("Norm", func(t *testing.T) {
		for _, maxNorm := range []float64{0.5, 1e6} {
			ps, gs := clipParams(t, d, 3, 1)
			norm, err := nn.ClipGradNorm(ps, maxNorm)
			if err != nil {
				t.Fatal(err)
			}
			wantNorm, want := ref.ClipNorm(gs, maxNorm, 1e-6)
			ref.Check(t, fmt.Sprintf("max %g: norm", maxNorm), tRead(t, norm), []float64{wantNorm}, nil, 1e-5)
			norm.Release()
			for i, p := range ps {
				ref.Check(t, fmt.Sprintf("max %g: %s", maxNorm, p.Name), tRead(t, p.Grad), want[i], nil, 1e-5)
			}
		}
	})
	t.Run("Value", func(t *testing.T) {
		ps, gs := clipParams(t, d, 5, 2)
		if err := nn.ClipGradValue(ps, 0.25); err != nil {
			t.Fatal(err)
		}
		for i, p := range ps {
			ref.Check(t, p.Name, tRead(t, p.Grad), ref.ClampValues(gs[i], 0.25), nil, 0)
		}
	})
	t.Run("Invalid", func(t *testing.T) {
		ps, _ := clipParams(t, d, 5, 2)
		for _, m := range []float64{0, -1, math.NaN(), 1e-50} {
			if n, err := nn.ClipGradNorm(ps, m); err == nil {
				n.Release()
				t.Errorf("max norm %g: no error", m)
			}
		}
		for _, c := range []float64{-1, math.NaN()} {
			if err := nn.ClipGradValue(ps, c); err == nil {
				t.Errorf("clip %g: no error", c)
			}
		}
		if _, err := nn.ClipGradNorm(nil, 1); err == nil {
			t.Error("no parameters: no error")
		}
		if _, err := nn.ClipGradNorm([]*nn.Param{ps[0], ps[0]}, 1); err == nil {
			t.Error("a parameter twice: no error")
		}
	})
	t.Run("AMPOverflowStillSkips", func(t *testing.T) { clipAMPOverflow(t, d) })
	t.Run("Clipper", func(t *testing.T) { clipClipper(t, d) })
}

// A NormClipper gives ClipGradNorm's bits, call after call, and clips
// inside a step captured and replayed by a tensor.Replayer, where
// ClipGradNorm's table upload is refused.
func clipClipper(t *testing.T, d *vk.Device) {
	want, _ := clipParams(t, d, 11, 1)
	got, _ := clipParams(t, d, 11, 1)
	var c nn.NormClipper
	defer c.Close()
	rp := tensor.NewReplayer(d)
	defer rp.Close()
	for i := range 4 {
		for j := range want { // new gradients each step, copied on the device
			g := tInput(t, d, tRand(want[j].Grad.Len(), uint64(40+10*i+j), 1, f32), want[j].Grad.Shape()...)
			if err := errors.Join(want[j].Grad.CopyFrom(g), got[j].Grad.CopyFrom(g)); err != nil {
				t.Fatal(err)
			}
		}
		wn, err := nn.ClipGradNorm(want, 0.5)
		if err != nil {
			t.Fatal(err)
		}
		var gn *tensor.Tensor
		err = rp.Step("clip", func() error {
			n, err := c.Clip(got, 0.5)
			if err == nil {
				n.Release()
			}
			return err
		})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if i == 0 { // the norm (a clip at 1e9 changes nothing), outside the Replayer
			if gn, err = c.Clip(got, 1e9); err != nil {
				t.Fatal(err)
			}
			tSameBits(t, "norm after the clip", tRead(t, gn), tRead(t, tensorNorm(t, want)))
			gn.Release()
		}
		wn.Release()
		for j := range want {
			tSameBits(t, fmt.Sprintf("step %d: %s", i, want[j].Name), tRead(t, got[j].Grad), tRead(t, want[j].Grad))
		}
	}
	if rp.Replayed != 2 {
		t.Errorf("%d clips replayed, want 2", rp.Replayed)
	}
}

// tensorNorm is the norm of ps's gradients, which a clip at 1e9 leaves.
func tensorNorm(t *testing.T, ps []*nn.Param) *tensor.Tensor {
	t.Helper()
	n, err := nn.ClipGradNorm(ps, 1e9)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Release)
	return n
}

// Under AMP the clip runs between Unscale and Step. A gradient holding an
// inf after the backward pass: Unscale flags it, the clip (whose norm is
// then inf) cannot make the step go ahead, and the weights, moments and
// step count stay; a clean step afterwards clips and steps.
func clipAMPOverflow(t *testing.T, d *vk.Device) {
	for _, byValue := range []bool{false, true} {
		t.Run(fmt.Sprintf("byValue=%v", byValue), func(t *testing.T) {
			ps, _ := clipParams(t, d, 7, 1)
			opt, err := nn.NewAdam(ps, nn.AdamOptions{LR: 0.01, Decoupled: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { opt.Close() })
			sc, err := scaler.New(scaler.Options{InitScale: 1024})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sc.Close() })
			sc.Scale(tInput(t, d, []float32{1}, 1)).Release() // the scaler moves to the device
			clip := func() {
				if byValue {
					if err := nn.ClipGradValue(ps, 1e-3); err != nil {
						t.Fatal(err)
					}
					return
				}
				norm, err := nn.ClipGradNorm(ps, 1e-3)
				if err != nil {
					t.Fatal(err)
				}
				norm.Release()
			}
			g := tRand(ps[1].Grad.Len(), 9, 1, f32)
			g[4] = float32(math.Inf(1))
			if err := ps[1].Grad.CopyFrom(tInput(t, d, g, ps[1].Grad.Shape()...)); err != nil {
				t.Fatal(err)
			}
			before := snapshot(t, opt, ps)
			if err := sc.Unscale(opt); err != nil {
				t.Fatal(err)
			}
			clip()
			skipped, err := sc.Step(opt)
			if err != nil {
				t.Fatal(err)
			}
			if err := sc.Update(); err != nil {
				t.Fatal(err)
			}
			if v, err := skipped.Value(); !v || err != nil {
				t.Errorf("Skipped = %v, %v; want true", v, err)
			}
			sameState(t, "skipped step", snapshot(t, opt, ps), before)
			if v := tRead(t, ps[1].Grad)[4]; !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) {
				t.Errorf("the clip made the inf gradient %g", v)
			}

			// A clean step: clipped and taken.
			clipParamsGrads(t, d, ps, 11)
			if err := sc.Unscale(opt); err != nil {
				t.Fatal(err)
			}
			clip()
			if skipped, err = sc.Step(opt); err != nil {
				t.Fatal(err)
			}
			if v, err := skipped.Value(); v || err != nil {
				t.Errorf("clean step: Skipped = %v, %v; want false", v, err)
			}
			if after := snapshot(t, opt, ps); after.steps != before.steps+1 {
				t.Errorf("clean step: %d steps, want %d", after.steps, before.steps+1)
			}
		})
	}
}

// clipParamsGrads sets finite gradients on ps.
func clipParamsGrads(t *testing.T, d *vk.Device, ps []*nn.Param, seed uint64) {
	t.Helper()
	for i, p := range ps {
		g := tRand(p.Grad.Len(), seed+uint64(i), 1, f32)
		if err := p.Grad.CopyFrom(tInput(t, d, g, p.Grad.Shape()...)); err != nil {
			t.Fatal(err)
		}
	}
}
