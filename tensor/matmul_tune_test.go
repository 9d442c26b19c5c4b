package tensor_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// TestAutotune runs the autotuner briefly on small problems into a temporary
// directory, then checks that MatMul takes the stored tile from there, that
// it still computes the right values, and that VKAMP_TUNE=off and a corrupt
// file leave the rule in charge.
func TestAutotune(t *testing.T) {
	d := devtest.Open(t)
	dir := t.TempDir()
	t.Setenv("VKAMP_TUNE_DIR", dir)
	t.Setenv("VKAMP_MATMUL", "")
	path, tuning, err := tensor.AutotuneMatMul(d, tensor.AutotuneOptions{Size: 128, MinTime: time.Millisecond, MaxCandidates: 3, Log: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(path) != dir {
		t.Fatalf("tuning written to %s, want under %s", path, dir)
	}
	got, err := tensor.ReadMatMulTuning(path)
	if err != nil || got == nil || len(got.Tiles) != len(tuning.Tiles) {
		t.Fatalf("read back %+v, %v; wrote %+v", got, err, tuning)
	}
	a := mmUpload(t, d, make([]float32, 128*128), mmF16, 128, 128)
	spec, err := tensor.MatMulSpec(d, a, a, tensor.MatMulOpts{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tile := range tuning.Tiles {
		if tile.Class != "wide-f16" {
			continue
		}
		for id, v := range tile.Spec {
			if spec[id] != v {
				t.Errorf("tuned %s %s: constant %d is %d, tuned %d", tile.Kernel, tile.Class, id, spec[id], v)
			}
		}
	}
	if len(tuning.Tiles) == 0 {
		t.Logf("%s has no tunable matmul kernel", d.Info().Name)
	}
	mmRunAll(t, d, []mmCase{{m: 128, n: 128, k: 128, da: mmF16, db: mmF16, out: mmF16}, {m: 16, n: 128, k: 128, da: mmF32, db: mmF32, out: mmF32}})

	// A corrupt file is an error for the reader and no tuning for MatMul.
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := tensor.ReadMatMulTuning(bad); err == nil {
		t.Error("corrupt tuning file: no error")
	}
	var probe map[string]any
	if b, _ := os.ReadFile(path); json.Unmarshal(b, &probe) != nil {
		t.Error("tuning file is not JSON")
	}
}
