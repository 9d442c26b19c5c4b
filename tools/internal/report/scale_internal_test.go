package report

import (
	"strings"
	"testing"
)

// TestScaleLegend: the scale's legend says that a constant scale never
// changed, naming it as a power of two, and counts the changes and skipped
// steps of one that moved; a run without a scale draws an empty panel.
func TestScaleLegend(t *testing.T) {
	flat := Run{Name: "fp16 AMP", ScaleSteps: []int{5, 10, 625}, Scale: []float64{65536, 65536, 65536}}
	_, leg, err := scalePlot(flat)
	if err != nil || len(leg) != 1 || !strings.Contains(leg[0].text, "2^16 throughout, it never changed in 625 steps") {
		t.Errorf("constant scale: %v, %+v", err, leg)
	}
	moved := Run{Name: "fp16 AMP", ScaleSteps: []int{5, 10, 15, 20}, Scale: []float64{65536, 32768, 32768, 65536}, Skipped: []int{7}}
	_, leg, err = scalePlot(moved)
	var texts []string
	for _, e := range leg {
		texts = append(texts, e.text)
	}
	got := strings.Join(texts, "; ")
	for _, want := range []string{"final 2^16", "a change of the scale (2)", "skipped step: inf/NaN gradient (1)"} {
		if err != nil || !strings.Contains(got, want) {
			t.Errorf("a scale that moved: %v, legend %q lacks %q", err, got, want)
		}
	}
	if _, leg, err := scalePlot(Run{Name: "fp32"}); err != nil || leg != nil {
		t.Errorf("no scale: %v, %+v", err, leg)
	}
	if _, _, err := scalePlot(Run{Name: "bad", ScaleSteps: []int{1}, Scale: []float64{0}}); err == nil {
		t.Error("a zero scale drew")
	}
}
