package scaler_test

import (
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/scaler"
)

// TestCombineFound: another process's inf, passed in by combine, makes a
// clean step skip and the scale back off, on the device and on the host
// path; a verdict of none found leaves a clean step alone; and combine sees
// this process's own inf.
func TestCombineFound(t *testing.T) {
	d := devtest.Open(t)
	for _, c := range []struct {
		name      string
		host      bool
		elsewhere bool
		wantSkip  bool
		wantScale float64
	}{
		{"device, inf elsewhere", false, true, true, 32768},
		{"host, inf elsewhere", true, true, true, 32768},
		{"device, none", false, false, false, 65536},
	} {
		s := newScaler(t, scaler.Options{})
		o := newSGD(t, d, 33)
		w0 := values(t, o.params[0])
		s.Scale(loss(t, d)).Release()
		var opt scaler.Optimizer = o
		if c.host {
			opt = hostSGD{o}
		}
		if err := s.CombineFound(opt, nil); err == nil {
			t.Errorf("%s: CombineFound before Unscale: no error", c.name)
		}
		if err := s.Unscale(opt); err != nil {
			t.Fatal(err)
		}
		var local *bool
		if err := s.CombineFound(opt, func(found bool) (bool, error) { local = &found; return found || c.elsewhere, nil }); err != nil {
			t.Fatal(err)
		}
		if local == nil || *local {
			t.Errorf("%s: combine got %v, want false (no inf here)", c.name, local)
		}
		skipped, err := s.Step(opt)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Update(); err != nil {
			t.Fatal(err)
		}
		if v, err := skipped.Value(); v != c.wantSkip || err != nil {
			t.Errorf("%s: skipped %v (%v), want %v", c.name, v, err, c.wantSkip)
		}
		changed := false
		for i, w := range values(t, o.params[0]) {
			changed = changed || math.Float32bits(w) != math.Float32bits(w0[i])
		}
		if changed == c.wantSkip {
			t.Errorf("%s: weights changed %v, want %v", c.name, changed, !c.wantSkip)
		}
		if v, _ := s.ScaleValue(); v != c.wantScale {
			t.Errorf("%s: scale %g, want %g", c.name, v, c.wantScale)
		}
	}
}
