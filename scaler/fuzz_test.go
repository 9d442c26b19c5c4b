package scaler_test

import (
	"testing"

	"github.com/vkamp/vkamp/scaler"
)

// FuzzLoadStateDict: any bytes give an error or a valid state, never a
// panic, and a rejected state changes nothing. An accepted scale is a
// normal positive fp32: a collapsed one is refused.
func FuzzLoadStateDict(f *testing.F) {
	f.Add([]byte(`{"scale": 65536.0, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2000, "_growth_tracker": 0}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"scale": 1e39, "growth_factor": 2, "backoff_factor": 0.5, "growth_interval": 1, "_growth_tracker": 0}`))
	f.Add([]byte(`[`))
	f.Add([]byte(`{"scale": -0.0, "growth_factor": 2, "backoff_factor": 0.5, "growth_interval": 1, "_growth_tracker": 0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := scaler.New(scaler.Options{InitScale: 8})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.LoadStateDict(data); err != nil {
			if v, _ := s.ScaleValue(); v != 8 {
				t.Fatalf("a rejected state changed the scale to %g", v)
			}
			return
		}
		v, _ := s.ScaleValue()
		if !(v >= 0x1p-126) || s.GrowthFactor() <= 1 || s.BackoffFactor() >= 1 || s.GrowthInterval() < 1 {
			t.Fatalf("accepted an invalid state: scale %g, factors %g %g, interval %d", v, s.GrowthFactor(), s.BackoffFactor(), s.GrowthInterval())
		}
	})
}
