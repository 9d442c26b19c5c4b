package report

import (
	"slices"
	"testing"
)

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   []string
	}{
		{1.75, 4.2, []string{"2.0", "2.5", "3.0", "3.5", "4.0"}},
		{0, 60, []string{"0", "10", "20", "30", "40", "50", "60"}},
		{0, 2000, []string{"0", "250", "500", "750", "1000", "1250", "1500", "1750", "2000"}},
		{1.4, 1.9, []string{"1.4", "1.5", "1.6", "1.7", "1.8", "1.9"}},
		{0, 0.3, []string{"0.00", "0.05", "0.10", "0.15", "0.20", "0.25", "0.30"}},
	} {
		var labels []string
		for _, tk := range (niceTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if !slices.Equal(labels, tc.want) {
			t.Errorf("ticks of [%g, %g]: %v, want %v", tc.lo, tc.hi, labels, tc.want)
		}
	}
	var labels []string
	for _, tk := range (pow2Ticks{}).Ticks(1000, 70000) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if !slices.Equal(labels, []string{"2^9", "2^10", "2^11", "2^12", "2^13", "2^14", "2^15", "2^16", "2^17"}) {
		t.Errorf("powers of two: %v", labels)
	}
}
