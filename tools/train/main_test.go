package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vkamp/vkamp/checkpoint"
	"github.com/vkamp/vkamp/internal/devtest"
)

func base() config {
	return config{precision: "f16", data: "../../testdata/mnist", epochs: 1, batch: 1000, logEvery: 2, lr: 1e-3, initScale: 65536, seed: 1, replay: true}
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
		{"unwritable report", func(c *config) { c.reportPath = filepath.Join(dir, "no", "such", "dir", "r.png") }, "cannot write the report"},
		// Found before training, not at the first save after an epoch.
		{"checkpoint under a file", func(c *config) {
			c.checkpoint = filepath.Join(corrupt, "train-images-idx3-ubyte", "ckpt")
		}, "is not a directory"},
		{"unknown device", func(c *config) { c.device = "no-such-gpu" }, "no device"},
		{"resume without checkpoint", func(c *config) { c.resume = true }, "-resume needs"},
		{"zero epochs", func(c *config) { c.epochs = 0 }, "must be positive"},
		{"nothing to resume", func(c *config) { c.resume, c.checkpoint = true, filepath.Join(dir, "empty") }, "no checkpoint"},
		{"negative checkpoint-every", func(c *config) { c.checkpointEvery, c.checkpoint = -1, dir }, "-checkpoint-every -1 must be 0 or positive"},
		{"checkpoint-every without checkpoint", func(c *config) { c.checkpointEvery = 10 }, "-checkpoint-every needs -checkpoint DIR"},
		{"negative collective timeout", func(c *config) { c.timeout = -time.Second }, "-collective-timeout -1s must be 0 or positive"},
		{"negative train-samples", func(c *config) { c.trainSamples = -1 }, "-train-samples -1"},
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

// TestCheckpointEvery: -checkpoint-every 3 saves after steps 3 and 6 of an
// 8-step epoch as well as at its end. A run killed just after the save of
// step 6 (LATEST pointed back at that version, which retention kept)
// resumes at step 7 of 8 and ends the epoch as the uninterrupted run did.
func TestCheckpointEvery(t *testing.T) {
	devtest.Open(t) // skips without a device, fails in CI
	dir := filepath.Join(t.TempDir(), "ckpt")
	c := base()
	c.checkpoint, c.checkpointEvery = dir, 3
	var out strings.Builder
	if err := run(context.Background(), c, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	summary := epochSummary(t, out.String())

	// Three saves: after steps 3 and 6, and at the epoch's end.
	latest, err := os.ReadFile(filepath.Join(dir, "LATEST"))
	if err != nil || !strings.HasPrefix(string(latest), "step-3\n") {
		t.Fatalf("LATEST holds %q (%v), want the third save", latest, err)
	}
	state, err := os.ReadFile(filepath.Join(dir, "step-2", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Extra struct {
			Progress struct {
				Epoch, Steps int
				Pos          int `json:"step_in_epoch"`
			}
		}
	}
	if err := json.Unmarshal(state, &st); err != nil {
		t.Fatal(err)
	}
	if p := st.Extra.Progress; p.Epoch != 0 || p.Steps != 6 || p.Pos != 6 {
		t.Errorf("the second save's progress %+v, want epoch 0 after step 6", p)
	}

	// The kill: the last save on disk is the one of step 6.
	if err := os.WriteFile(filepath.Join(dir, "LATEST"), []byte("step-2\nstate.json "+checkpoint.Sum(state)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.resume = true
	var out2 strings.Builder
	if err := run(context.Background(), c, &out2, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out2.String(), "resumed from "+dir+" at epoch 1, step 7 of 8\n") {
		t.Errorf("the resumed run says:\n%s", out2.String())
	}
	if got := epochSummary(t, out2.String()); got != summary {
		t.Errorf("resumed epoch\n%s\nuninterrupted\n%s", got, summary)
	}
}

// epochSummary returns the first epoch summary line of out, without its
// timing.
func epochSummary(t *testing.T, out string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "epoch 1:") {
			s, _, _ := strings.Cut(line, "  skipped")
			return s
		}
	}
	t.Fatalf("no epoch summary in\n%s", out)
	return ""
}

// TestProfile: -profile records every step (a captured step takes no
// timestamps) and ends with the device time of the step's kernels.
func TestProfile(t *testing.T) {
	devtest.Open(t)
	c := base()
	c.batch, c.trainSamples, c.testSamples, c.profile = 32, 32*3, 100, true
	var out strings.Builder
	if err := run(context.Background(), c, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"0 replayed, 0 captured, 3 recorded (replay off: -profile", "profile: kernels", "matmul", "adam"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output does not say %q:\n%s", want, out.String())
		}
	}
}

// TestResumePastLastEpoch: resuming a checkpoint that has all of -epochs
// done is an error saying so; it once did nothing and exited 0.
func TestResumePastLastEpoch(t *testing.T) {
	devtest.Open(t)
	c := base()
	c.epochs, c.checkpoint = 1, filepath.Join(t.TempDir(), "ckpt")
	if err := run(context.Background(), c, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	c.resume = true
	err := run(context.Background(), c, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "1 epochs done, and -epochs is 1: nothing to train") {
		t.Errorf("resume past the last epoch: got %v, want an error saying nothing is left to train", err)
	}
	c.epochs = 2 // one more epoch trains
	if err := run(context.Background(), c, io.Discard, io.Discard); err != nil {
		t.Errorf("resume with -epochs 2: %v", err)
	}
}
