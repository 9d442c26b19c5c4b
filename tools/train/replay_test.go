package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// TestReplayedTraining trains the same short runs with -replay and without,
// and checks that they leave the same checkpoint bytes (weights, optimizer
// and scaler state, progress and history) and that the replayed run did
// replay its steps. Two epochs: the running loss and the skip flags live
// in tensors that outlast an epoch. The fp16 run starts at a scale of 2^22,
// so that its first steps overflow and are skipped, replayed or not. The
// CNN's dropout reads a seed written before each step, so it replays too,
// with a new mask every step (two epochs of two steps, left out on
// SwiftShader and in -short runs, where it takes minutes). A new epoch's
// learning rate (gamma) is read on the device, so one capture serves both
// epochs, with Adam and with the CNN's Adadelta.
func TestReplayedTraining(t *testing.T) {
	d := devtest.Open(t) // skips without a device, fails in CI
	slowCNN := testing.Short() || d.Info().Type == vk.TypeCPU && !strings.Contains(strings.ToLower(d.Info().DriverName), "llvmpipe")
	cases := []struct {
		model, precision string
		initScale, gamma float64
		replayed         int // of 14 steps (2 epochs of 7), of 4 for the CNN
	}{
		{"mlp", "f32", 65536, 0, 12},
		{"mlp", "f16", 1 << 22, 0, 12},
		{"mlp", "bf16", 65536, 0, 12},
		{"mlp", "f32", 65536, 0.5, 12}, // a new learning rate: still replayed
		{"cnn", "f16", 65536, 0.7, 2},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s-%s-gamma%g", tc.model, tc.precision, tc.gamma), func(t *testing.T) {
			if tc.model == "cnn" && slowCNN {
				t.Skip("the CNN is slow on this device")
			}
			var files [2]map[string][]byte
			var outs [2]string
			for i, replay := range []bool{false, true} {
				c := base()
				c.model, c.precision, c.initScale, c.gamma, c.replay = tc.model, tc.precision, tc.initScale, tc.gamma, replay
				c.epochs, c.batch, c.logEvery, c.trainSamples, c.testSamples = 2, 32, 3, 32*7, 100
				if tc.model == "cnn" {
					c.epochs, c.batch, c.trainSamples, c.testSamples = 2, 16, 16*2, 20
				}
				c.checkpoint = filepath.Join(t.TempDir(), "ckpt")
				var out strings.Builder
				if err := run(context.Background(), c, &out, io.Discard); err != nil {
					t.Fatalf("replay=%v: %v", replay, err)
				}
				files[i], outs[i] = latest(t, c.checkpoint), out.String()
			}
			if len(files[0]) == 0 || len(files[0]) != len(files[1]) {
				t.Fatalf("checkpoints of %d and %d files", len(files[0]), len(files[1]))
			}
			for name, b := range files[0] {
				if !bytes.Equal(b, files[1][name]) {
					t.Errorf("%s differs between the recorded and the replayed run", name)
				}
			}
			if tc.precision == "f16" && tc.model == "mlp" && !regexp.MustCompile(`skipped [1-9]`).MatchString(outs[1]) {
				t.Errorf("no step skipped:\n%s", outs[1])
			}
			if a, b := epochSummary(t, outs[0]), epochSummary(t, outs[1]); a != b {
				t.Errorf("recorded run: %s\nreplayed run: %s", a, b)
			}
			replayed, recorded := stepCounts(t, outs[1])
			// One step is recorded and one captured; the rest replay.
			if tc.model == "mlp" && (replayed != tc.replayed || recorded != (14-tc.replayed)/2) {
				t.Errorf("%d steps replayed and %d recorded of 14, want %d and %d:\n%s", replayed, recorded, tc.replayed, (14-tc.replayed)/2, outs[1])
			}
			if tc.model == "cnn" && (replayed != tc.replayed || recorded != 1) {
				t.Errorf("%d steps replayed and %d recorded of 4, want %d and 1:\n%s", replayed, recorded, tc.replayed, outs[1])
			}
			if r, _ := stepCounts(t, outs[0]); r != 0 {
				t.Errorf("%d steps replayed with -replay=false", r)
			}
		})
	}
}

// latest returns the files of the checkpoint dir's latest version.
func latest(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	l, err := os.ReadFile(filepath.Join(dir, "LATEST"))
	if err != nil {
		t.Fatal(err)
	}
	version, _, _ := strings.Cut(string(l), "\n")
	entries, err := os.ReadDir(filepath.Join(dir, version))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range entries {
		if files[e.Name()], err = os.ReadFile(filepath.Join(dir, version, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

var stepsLine = regexp.MustCompile(`steps: (\d+) replayed, \d+ captured, (\d+) recorded`)

// stepCounts returns the counts of the run's last steps line.
func stepCounts(t *testing.T, out string) (replayed, recorded int) {
	t.Helper()
	m := stepsLine.FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		t.Fatalf("no steps line in\n%s", out)
	}
	last := m[len(m)-1]
	replayed, _ = strconv.Atoi(last[1])
	recorded, _ = strconv.Atoi(last[2])
	return replayed, recorded
}
