package nn_test

import (
	"fmt"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/vk"
)

func TestParamGroups(t *testing.T) {
	d := devtest.Open(t)
	t.Run("DecayGroups", func(t *testing.T) {
		ps, _ := optParams(t, d) // shapes [1], [5 3], [7], [3 4099]
		gs := nn.DecayGroups(ps, 0.1)
		if len(gs) != 2 || gs[0].WeightDecay != 0.1 || gs[1].WeightDecay != 0 ||
			fmt.Sprint(gs[0].Params) != fmt.Sprint([]*nn.Param{ps[1], ps[3]}) ||
			fmt.Sprint(gs[1].Params) != fmt.Sprint([]*nn.Param{ps[0], ps[2]}) {
			t.Errorf("DecayGroups = %+v", gs)
		}
		if gs := nn.DecayGroups(ps[1:2], 0.1); len(gs) != 1 || gs[0].WeightDecay != 0.1 {
			t.Errorf("DecayGroups of one matrix = %+v; want its group alone", gs)
		}
	})
	t.Run("AdamW", func(t *testing.T) { groupsAdamW(t, d) })
	t.Run("SGD", func(t *testing.T) { groupsSGD(t, d) })
	t.Run("Invalid", func(t *testing.T) {
		ps, _ := optParams(t, d)
		for what, gs := range map[string][]nn.ParamGroup{
			"no groups":      nil,
			"empty group":    {{Params: ps}, {}},
			"negative decay": {{Params: ps, WeightDecay: -1}},
			"negative scale": {{Params: ps, LRScale: -1}},
			"a param twice":  {{Params: ps}, {Params: ps[:1]}},
			"options' decay": {{Params: ps}},
		} {
			o := nn.AdamOptions{LR: 0.1}
			if what == "options' decay" {
				o.WeightDecay = 0.1
			}
			if a, err := nn.NewAdamGroups(gs, o); err == nil {
				a.Close()
				t.Errorf("%s: no error", what)
			}
		}
	})
	t.Run("StepUnless", func(t *testing.T) {
		ps, _ := optParams(t, d)
		opt, err := nn.NewAdamGroups(nn.DecayGroups(ps, 0.1), nn.AdamOptions{LR: 0.01, Decoupled: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { opt.Close() })
		setGrads(t, d, opt, ps, optGrads(1))
		before := snapshot(t, opt, ps)
		if err := opt.StepUnless(tInput(t, d, []float32{1}, 1)); err != nil {
			t.Fatal(err)
		}
		sameState(t, "skipped grouped step", snapshot(t, opt, ps), before)
	})
	t.Run("Checkpoint", func(t *testing.T) { groupsCheckpoint(t, d) })
}

// groupsAdamW: AdamW over nanoGPT's two groups, the undecayed one with LR
// scale 3, three steps with an LR change, against the host's AdamW with
// each group's settings.
func groupsAdamW(t *testing.T, d *vk.Device) {
	ps, w := optParams(t, d)
	gs := nn.DecayGroups(ps, 0.1)
	gs[1].LRScale = 3
	o := nn.AdamOptions{LR: 0.05, Decoupled: true}
	opt, err := nn.NewAdamGroups(gs, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opt.Close() })
	if got := opt.Groups(); len(got) != 2 || got[0].WeightDecay != 0.1 || got[1].LRScale != 3 || got[0].LRScale != 1 {
		t.Errorf("Groups() = %+v", got)
	}
	decay := []bool{false, true, false, true} // by the shapes of optParams
	m, v := make([][]float64, len(ps)), make([][]float64, len(ps))
	for j := range ps {
		m[j], v[j] = make([]float64, len(w[j])), make([]float64, len(w[j]))
	}
	for s := 1; s <= 3; s++ {
		if s == 3 {
			if err := opt.SetLR(0.02); err != nil {
				t.Fatal(err)
			}
		}
		gsS := optGrads(s)
		setGrads(t, d, opt, ps, gsS)
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		for j := range ps {
			h := nn.AdamOptions{LR: opt.LR(), Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Decoupled: true}
			if decay[j] {
				h.WeightDecay = 0.1
			} else {
				h.LR = float64(float32(h.LR * 3)) // the kernel gets LR*scale in fp32
			}
			hostAdam(h, s, w[j], to64(gsS[j]), m[j], v[j])
		}
	}
	// Moments come in the optimizer's order: the groups', p1 p3 p0 p2.
	order := []int{1, 3, 0, 2}
	var ops []*nn.Param
	var ow, om, ov [][]float64
	for _, j := range order {
		ops, ow, om, ov = append(ops, ps[j]), append(ow, w[j]), append(om, m[j]), append(ov, v[j])
	}
	checkOpt(t, "grouped AdamW", opt, ops, ow, om, ov)
	if n, err := opt.Steps(); n != 3 || err != nil {
		t.Errorf("Steps() = %d, %v; want 3", n, err)
	}
}

// groupsSGD: SGD with momentum over two groups of different weight decay.
func groupsSGD(t *testing.T, d *vk.Device) {
	ps, w := optParams(t, d)
	o := nn.SGDOptions{LR: 0.1, Momentum: 0.9}
	opt, err := nn.NewSGDGroups([]nn.ParamGroup{{Params: ps[:2], WeightDecay: 0.05}, {Params: ps[2:], LRScale: 0.5}}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opt.Close() })
	bufs := make([][]float64, len(ps))
	for s := 1; s <= 2; s++ {
		gs := optGrads(s)
		setGrads(t, d, opt, ps, gs)
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		for j := range ps {
			h := o
			if j < 2 {
				h.WeightDecay = 0.05
			} else {
				h.LR = float64(float32(o.LR * 0.5))
			}
			bufs[j] = hostSGD(h, w[j], to64(gs[j]), bufs[j])
		}
	}
	checkOpt(t, "grouped SGD", opt, ps, w, bufs, nil)
}

// A grouped optimizer's checkpoint round-trips, its groups' settings
// included, and resumes bit for bit; one with other groups is refused.
func groupsCheckpoint(t *testing.T, d *vk.Device) {
	mk := func(scale float64) ([]*nn.Param, *nn.Adam) {
		ps, _ := optParams(t, d)
		gs := nn.DecayGroups(ps, 0.1)
		gs[1].LRScale = scale
		opt, err := nn.NewAdamGroups(gs, nn.AdamOptions{LR: 0.01, Decoupled: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { opt.Close() })
		return ps, opt
	}
	ps, a := mk(2)
	for s := 1; s <= 2; s++ {
		setGrads(t, d, a, ps, optGrads(s))
		if err := a.Step(); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	if err := nn.SaveCheckpoint(dir, ps, nil, a); err != nil {
		t.Fatal(err)
	}
	ps2, b := mk(5) // another LR scale: the checkpoint's replaces it
	if _, err := nn.LoadCheckpoint(dir, ps2, b); err != nil {
		t.Fatal(err)
	}
	sameState(t, "loaded", snapshot(t, b, ps2), snapshot(t, a, ps))
	if g := b.Groups(); g[1].LRScale != 2 || g[0].WeightDecay != 0.1 {
		t.Errorf("loaded groups %+v; want the saved settings", g)
	}
	for _, x := range []struct {
		opt *nn.Adam
		ps  []*nn.Param
	}{{a, ps}, {b, ps2}} {
		setGrads(t, d, x.opt, x.ps, optGrads(3))
		if err := x.opt.Step(); err != nil {
			t.Fatal(err)
		}
	}
	sameState(t, "a step after the load", snapshot(t, b, ps2), snapshot(t, a, ps))

	// Other groups, or none, are refused, and change nothing.
	ps3, _ := optParams(t, d)
	plain, err := nn.NewAdam(ps3, nn.AdamOptions{LR: 0.01, Decoupled: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.Close() })
	other, err := nn.NewAdamGroups([]nn.ParamGroup{{Params: ps3[:2]}, {Params: ps3[2:], WeightDecay: 0.1}}, nn.AdamOptions{LR: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	for name, opt := range map[string]*nn.Adam{"ungrouped": plain, "other groups": other} {
		before := snapshot(t, opt, ps3)
		if _, err := nn.LoadCheckpoint(dir, ps3, opt); err == nil {
			t.Errorf("%s: loaded", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
		sameState(t, name+" after the refused load", snapshot(t, opt, ps3), before)
	}
}
