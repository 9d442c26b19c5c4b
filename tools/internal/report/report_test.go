package report_test

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkamp/vkamp/tools/internal/report"
)

func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.png")
	amp := report.Run{Name: "fp16 AMP", Loss: []float64{0.6, 0.3, 0.2}, Accuracy: []float64{0.9, 0.93, 0.95},
		ScaleSteps: []int{10, 20, 30, 40}, Scale: []float64{65536, 32768, 32768, 65536}, Skipped: []int{12}}
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
}
