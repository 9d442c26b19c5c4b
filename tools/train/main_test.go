package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vkamp/vkamp/internal/devtest"
)

func base() config {
	return config{precision: "f16", data: "../../testdata/mnist", epochs: 1, batch: 1000, logEvery: 2, lr: 1e-3, initScale: 65536, seed: 1}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt")
	os.Mkdir(corrupt, 0o755)
	for _, name := range []string{"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"} {
		os.WriteFile(filepath.Join(corrupt, name), []byte("not an IDX file"), 0o644)
	}
	cases := []struct {
		name string
		edit func(*config)
		want string
	}{
		{"missing data", func(c *config) { c.data = filepath.Join(dir, "nothing") }, "neither"},
		{"corrupt data", func(c *config) { c.data = corrupt }, "magic"},
		{"unknown precision", func(c *config) { c.precision = "f8" }, "unknown precision"},
		{"bf16", func(c *config) { c.precision = "bf16" }, "not supported"},
		{"unwritable report", func(c *config) { c.reportPath = filepath.Join(dir, "no", "such", "dir", "r.png") }, "cannot write the report"},
		{"unknown device", func(c *config) { c.device = "no-such-gpu" }, "no device"},
		{"resume without checkpoint", func(c *config) { c.resume = true }, "-resume needs"},
		{"zero epochs", func(c *config) { c.epochs = 0 }, "must be positive"},
		{"nothing to resume", func(c *config) { c.resume, c.checkpoint = true, filepath.Join(dir, "empty") }, "no checkpoint"},
	}
	for _, tc := range cases {
		c := base()
		tc.edit(&c)
		err := run(context.Background(), c, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestInterruptResume: an interrupted run writes a checkpoint and -resume
// finishes it with a report.
func TestInterruptResume(t *testing.T) {
	devtest.Open(t) // skips without a device, fails in CI
	dir := t.TempDir()
	c := base()
	c.epochs, c.checkpoint = 2, filepath.Join(dir, "ckpt")
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncWriter{}
	go func() {
		// Cancel once the first epoch's summary is out.
		for !strings.Contains(out.String(), "epoch 1:") {
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		cancel()
	}()
	err := run(ctx, c, out, io.Discard)
	cancel()
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	c.resume, c.reportPath = true, filepath.Join(dir, "r.png")
	var out2 strings.Builder
	if err := run(context.Background(), c, &out2, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out2.String(), "epoch 2:") {
		t.Errorf("the resumed run did not finish epoch 2:\n%s", out2.String())
	}
	if _, err := os.Stat(c.reportPath); err != nil {
		t.Error(err)
	}
}

type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestCollapsedScale: a loss scale below about 2.9e-39 makes every step's
// unscaled gradients inf or NaN. Every step is skipped (the weights stay
// finite), and after collapseAfter steps in a row the run stops with an
// error naming the count and the scale, writing no checkpoint.
func TestCollapsedScale(t *testing.T) {
	devtest.Open(t)
	c := base()
	c.batch, c.initScale, c.checkpoint = 100, 1e-39, filepath.Join(t.TempDir(), "ckpt")
	var out strings.Builder
	err := run(context.Background(), c, &out, io.Discard)
	if !errors.Is(err, errCollapsed) {
		t.Fatalf("got %v, want the collapsed-scale error\n%s", err, out.String())
	}
	t.Logf("train: %v", err)
	for _, want := range []string{"50 steps in a row", "scale is now 0", "no checkpoint was written"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(c.checkpoint); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a checkpoint was written (%v)", err)
	}
}
