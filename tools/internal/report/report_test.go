package report_test

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkamp/vkamp/tools/internal/report"
)

// TestWrite draws a run with its read step losses and a moving scale beside
// an fp32 run (REPORT_PNG_DIR keeps the figure to look at).
func TestWrite(t *testing.T) {
	dir := t.TempDir()
	if p := os.Getenv("REPORT_PNG_DIR"); p != "" {
		dir = p
	}
	path := filepath.Join(dir, "r.png")
	amp := report.Run{Name: "fp16 AMP", Loss: []float64{0.6, 0.3, 0.2}, Accuracy: []float64{0.9, 0.93, 0.95},
		ScaleSteps: []int{10, 20, 30, 40}, Scale: []float64{65536, 32768, 32768, 65536}, Skipped: []int{12}, StepsPerEpoch: 20}
	for s := 0; s < 60; s += 5 {
		amp.LossSteps = append(amp.LossSteps, s)
		amp.StepLoss = append(amp.StepLoss, 1/(1+float64(s)/10)+0.05*float64(s%3))
	}
	fp32 := report.Run{Name: "fp32", Loss: []float64{0.61, 0.31, 0.21}, Accuracy: []float64{0.9, 0.93, 0.951}}
	if err := report.Write(path, amp, fp32); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 300 {
		t.Errorf("image %v too small", b)
	}
	if err := report.Write(filepath.Join(t.TempDir(), "missing", "r.png"), amp); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
	bad := amp
	bad.StepLoss = bad.StepLoss[1:]
	if err := report.Write(filepath.Join(dir, "bad.png"), bad); err == nil {
		t.Error("mismatched step losses drew")
	}
}
