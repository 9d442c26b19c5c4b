package main

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
)

// TestEvalOnly: -eval-only on a checkpoint evaluates the trained weights
// (a loss well below the initial ln(65)), not fresh ones, at the
// checkpoint's iteration, prints one evaluation with the standard errors,
// writes no checkpoint, and gives the same figures twice: the batches come
// from the checkpoint's sampler state.
func TestEvalOnly(t *testing.T) {
	devtest.Open(t)
	dir := t.TempDir()
	c := tiny()
	c.iters, c.checkpoint = 20, filepath.Join(dir, "ck")
	if err := run(context.Background(), c, io.Discard, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	latest, err := os.ReadFile(filepath.Join(c.checkpoint, "LATEST"))
	if err != nil {
		t.Fatal(err)
	}
	c.resume, c.evalOnly, c.evalIters = true, true, 8
	a, log := runJSON(t, c)
	b, _ := runJSON(t, c)
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("-eval-only printed %d and %d evaluations, want 1:\n%s", len(a), len(b), log)
	}
	e := a[0]
	t.Logf("eval-only: %v", e)
	if e["iter"] != 20 || !(e["val_loss"] < math.Log(65)-0.5) || !(e["train_loss"] < math.Log(65)-0.5) {
		t.Errorf("evaluation %v: want iteration 20 and the trained model's loss, below %.2f", e, math.Log(65)-0.5)
	}
	// A batch's loss varies by more than 0.001 and less than 1 here.
	for _, k := range []string{"train_loss_se", "val_loss_se"} {
		if !(e[k] > 0.001/math.Sqrt(8) && e[k] < 1/math.Sqrt(8)) {
			t.Errorf("%s %v: want the standard error of 8 batches' mean", k, e[k])
		}
	}
	for k, v := range e {
		if b[0][k] != v {
			t.Errorf("%s: %v then %v: two evaluations of one checkpoint differ", k, v, b[0][k])
		}
	}
	if after, err := os.ReadFile(filepath.Join(c.checkpoint, "LATEST")); err != nil || !bytes.Equal(after, latest) {
		t.Errorf("-eval-only changed the checkpoint: LATEST %q, then %q (%v)", latest, after, err)
	}
}
