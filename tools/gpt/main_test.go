package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tools/internal/jsonnum"
)

// tiny is a GPT small enough for a test of seconds on a software driver:
// 2 layers, 2 heads, 32 dims, context 16, batch 4, 30 iterations, with
// the CPU recipe's optimizer at a higher learning rate and a short
// warm-up, so that the loss falls clearly in 30 steps.
func tiny() config {
	r := recipes["cpu"]
	r.layers, r.heads, r.dim, r.block, r.batch = 2, 2, 32, 16, 4
	r.iters, r.evalEvery, r.evalIters = 30, 10, 2
	r.lr, r.minLR, r.warmup = 1e-2, 1e-3, 5
	return config{recipe: r, data: "../../testdata/tinyshakespeare/input.txt", recipeName: "cpu", precision: "f16",
		seed: 1337, temperature: 0.8, topK: 200, prompt: "\n", replay: true}
}

// TestReplayedTraining: runs with dropout, in each precision, leave the same
// checkpoint (weights, AdamW's state, the scaler, the history) whether the
// step is replayed from one capture (the default) or recorded every
// iteration; the learning rate changes every iteration (warm-up, cosine).
func TestReplayedTraining(t *testing.T) {
	devtest.Open(t)
	for _, prec := range []string{"f16", "bf16", "f32"} {
		t.Run(prec, func(t *testing.T) {
			dir := t.TempDir()
			var logs [2]bytes.Buffer
			for i, replay := range []bool{false, true} {
				c := tiny()
				c.precision, c.dropout, c.iters, c.replay = prec, 0.1, 12, replay
				c.checkpoint = filepath.Join(dir, fmt.Sprint(replay))
				if err := run(context.Background(), c, &logs[i], &logs[i], io.Discard); err != nil {
					t.Fatal(err)
				}
			}
			for _, f := range []string{"model.safetensors", "optimizer-0.safetensors", "state.json"} {
				if !bytes.Equal(latestFile(t, filepath.Join(dir, "false"), f), latestFile(t, filepath.Join(dir, "true"), f)) {
					t.Errorf("%s differs between the recorded and the replayed run", f)
				}
			}
			for i, want := range []string{"steps: 0 replayed, 0 captured, 12 recorded (replay off: off)", "steps: 10 replayed, 1 captured, 1 recorded\n"} {
				if !strings.Contains(logs[i].String(), want) {
					t.Errorf("run %d's log does not say %q:\n%s", i, want, logs[i].String())
				}
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	binary := filepath.Join(dir, "binary")
	os.WriteFile(binary, []byte{0xff, 0xfe, 0x00}, 0o644)
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("too short to hold a context"), 0o644)
	cases := []struct {
		name string
		edit func(*config)
		want string
	}{
		{"missing data", func(c *config) { c.data = filepath.Join(dir, "nothing") }, "no such file"},
		{"binary data", func(c *config) { c.data = binary }, "not UTF-8"},
		{"short data", func(c *config) { c.data = short }, "too few"},
		{"endless data", func(c *config) { c.data = "/dev/zero" }, "more than 1073741824 bytes"},
		{"unknown precision", func(c *config) { c.precision = "f8" }, "unknown precision"},
		{"zero iters", func(c *config) { c.iters = 0 }, "must be positive"},
		{"heads", func(c *config) { c.heads = 3 }, "multiple of heads"},
		{"dropout", func(c *config) { c.dropout = 1 }, "-dropout 1 must be in [0, 1)"},
		{"NaN dropout", func(c *config) { c.dropout = dropoutFlag(math.NaN(), 0.1) }, "-dropout NaN must be in [0, 1)"},
		{"negative sample", func(c *config) { c.sample = -1 }, "-sample"},
		{"negative temperature", func(c *config) { c.temperature = -1 }, "-temperature"},
		{"huge temperature", func(c *config) { c.temperature = 1e30 }, "-temperature 1e+30 must be in [0, 1e6]"},
		{"checkpoint under a file", func(c *config) { c.checkpoint = filepath.Join(binary, "ckpt") }, "is not a directory"},
		{"negative top-k", func(c *config) { c.topK = -1 }, "-top-k"},
		{"prompt outside the vocabulary", func(c *config) { c.sample, c.prompt = 10, "ü" }, "not in the vocabulary"},
		{"unwritable report", func(c *config) { c.reportPath = filepath.Join(dir, "no", "dir", "r.png") }, "cannot write the report"},
		{"resume without checkpoint", func(c *config) { c.resume = true }, "-resume needs"},
		{"nothing to resume", func(c *config) { c.resume, c.checkpoint = true, filepath.Join(dir, "empty") }, "no checkpoint"},
		{"unknown device", func(c *config) { c.device = "no-such-gpu" }, "no device"},
		{"negative collective timeout", func(c *config) { c.timeout = -time.Second }, "-collective-timeout -1s must be 0 or positive"},
	}
	for _, tc := range cases {
		c := tiny()
		tc.edit(&c)
		err := run(context.Background(), c, io.Discard, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// runJSON runs c with -json and returns its evaluations.
func runJSON(t *testing.T, c config) ([]map[string]float64, string) {
	t.Helper()
	c.json = true
	var out, log bytes.Buffer
	if err := run(context.Background(), c, &out, &log, io.Discard); err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var evals []map[string]float64
	for i, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var e map[string]float64
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %d of stdout is not a JSON object of numbers: %q: %v", i, line, err)
		}
		evals = append(evals, e)
	}
	return evals, log.String()
}

// TestJSONLossFalls: -json prints one object per evaluation (iterations 0,
// 10, 20 and 30, the last line the final one) with the documented keys;
// the loss falls from about ln(65) = 4.17 by more than 0.5 in 30
// iterations, and a sample is printed to the log.
func TestJSONLossFalls(t *testing.T) {
	devtest.Open(t)
	c := tiny()
	c.sample = 40
	evals, log := runJSON(t, c)
	iters := []float64{}
	for _, e := range evals {
		for _, k := range []string{"iter", "train_loss", "val_loss", "tokens_per_s", "scale"} {
			if _, ok := e[k]; !ok {
				t.Fatalf("evaluation %v has no %q", e, k)
			}
		}
		iters = append(iters, e["iter"])
	}
	if !slices.Equal(iters, []float64{0, 10, 20, 30}) {
		t.Fatalf("evaluations at iterations %v, want 0 10 20 30", iters)
	}
	first, last := evals[0], evals[len(evals)-1]
	t.Logf("val loss %.4f -> %.4f, train loss %.4f -> %.4f, %.0f tokens/s, scale %g",
		first["val_loss"], last["val_loss"], first["train_loss"], last["train_loss"], last["tokens_per_s"], last["scale"])
	if math.Abs(first["val_loss"]-math.Log(65)) > 0.2 {
		t.Errorf("initial val loss %.4f, want about ln(65) = 4.17", first["val_loss"])
	}
	if !(last["val_loss"] < first["val_loss"]-0.5 && last["train_loss"] < first["train_loss"]-0.5) {
		t.Errorf("the loss did not fall by 0.5: %v -> %v", first, last)
	}
	if first["tokens_per_s"] != 0 || !(last["tokens_per_s"] > 0) || !(last["scale"] >= 1) {
		t.Errorf("tokens/s %v then %v, scale %v", first["tokens_per_s"], last["tokens_per_s"], last["scale"])
	}
	if !strings.Contains(log, "number of parameters") || !strings.Contains(log, "sample (temperature 0.8, top-k 200):") {
		t.Errorf("the log lacks the parameter count or the sample:\n%s", log)
	}
}

// TestFP16AgainstFP32: the same run in fp16 AMP, bf16 AMP and fp32 (same weights,
// batches and schedule) ends within 0.1 in loss. fp16 rounds the matrix
// products' and attention's inputs (2^-11 relative), and 30 steps at lr
// 1e-2 amplify that: measured 0.025 on lavapipe, 0.007 on SwiftShader (at
// a loss of 3.35, 0.8 below the start).
func TestFP16AgainstFP32(t *testing.T) {
	devtest.Open(t)
	c := tiny()
	amp, _ := runJSON(t, c)
	c.precision = "f32"
	fp32, _ := runJSON(t, c)
	a, f := amp[len(amp)-1], fp32[len(fp32)-1]
	t.Logf("final val loss: fp16 AMP %.4f, fp32 %.4f; train loss %.4f, %.4f", a["val_loss"], f["val_loss"], a["train_loss"], f["train_loss"])
	if math.Abs(a["val_loss"]-f["val_loss"]) > 0.1 || math.Abs(a["train_loss"]-f["train_loss"]) > 0.1 {
		t.Errorf("fp16 AMP %v and fp32 %v differ by more than 0.1", a, f)
	}
	if f["scale"] != 1 {
		t.Errorf("fp32 scale %v, want 1", f["scale"])
	}
	// bf16 keeps 8 bits where fp16 keeps 11, without a loss scale: the same
	// run within 0.1 too (measured 0.009 on lavapipe).
	c.precision = "bf16"
	bf, _ := runJSON(t, c)
	b := bf[len(bf)-1]
	t.Logf("final val loss: bf16 AMP %.4f; train loss %.4f", b["val_loss"], b["train_loss"])
	if math.Abs(b["val_loss"]-f["val_loss"]) > 0.1 || b["scale"] != 1 {
		t.Errorf("bf16 AMP %v and fp32 %v differ by more than 0.1, or bf16 has a loss scale", b, f)
	}
}

// TestResumeBitExact: a run of 20 iterations stopped at iteration 7 (as
// by Ctrl-C, between evaluations, with dropout on) and resumed ends with
// the same weights, optimizer moments, loss scale and history, bit for
// bit, as the run that was never stopped.
func TestResumeBitExact(t *testing.T) {
	devtest.Open(t)
	dir := t.TempDir()
	c := tiny()
	c.dropout, c.iters = 0.1, 20
	c.checkpoint = filepath.Join(dir, "straight")
	if err := run(context.Background(), c, io.Discard, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	c.checkpoint, c.stopAt = filepath.Join(dir, "stopped"), 7
	var log bytes.Buffer
	if err := run(context.Background(), c, &log, &log, io.Discard); !errors.Is(err, context.Canceled) {
		t.Fatalf("the stopped run returned %v, want context.Canceled\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "at iteration 7: continue with -resume") {
		t.Errorf("the stopped run did not say where it stopped:\n%s", log.String())
	}
	c.stopAt, c.resume = 0, true
	log.Reset()
	if err := run(context.Background(), c, &log, &log, io.Discard); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "resumed from") || !strings.Contains(log.String(), "iteration 7") {
		t.Errorf("the resumed run's log:\n%s", log.String())
	}
	for _, f := range []string{"model.safetensors", "optimizer-0.safetensors"} {
		a, b := latestFile(t, filepath.Join(dir, "straight"), f), latestFile(t, filepath.Join(dir, "stopped"), f)
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between the straight and the resumed run", f)
		}
	}
	a, b := latestState(t, filepath.Join(dir, "straight")), latestState(t, filepath.Join(dir, "stopped"))
	for _, k := range []string{"scaler", "history", "progress"} {
		if !bytes.Equal(a[k], b[k]) {
			t.Errorf("section %s differs:\n%s\n%s", k, a[k], b[k])
		}
	}
}

// TestResumeFromEvaluation: a run stopped inside an evaluation (as by
// Ctrl-C while the evaluation at iteration 10 runs its batches) saves a
// checkpoint that resumes with that evaluation and ends with the same
// weights, optimizer moments, loss scale and history, bit for bit, as the
// run that was never stopped.
func TestResumeFromEvaluation(t *testing.T) {
	devtest.Open(t)
	dir := t.TempDir()
	c := tiny()
	c.iters = 20
	c.checkpoint = filepath.Join(dir, "straight")
	if err := run(context.Background(), c, io.Discard, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	c.checkpoint, c.stopEvalAt = filepath.Join(dir, "stopped"), 10
	var log bytes.Buffer
	if err := run(context.Background(), c, &log, &log, io.Discard); !errors.Is(err, context.Canceled) {
		t.Fatalf("the run stopped in its evaluation returned %v, want context.Canceled\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "at iteration 10: continue with -resume") || strings.Contains(log.String(), "iter 10:") {
		t.Errorf("the stopped run's log (it must say where it stopped and report no evaluation at 10):\n%s", log.String())
	}
	c.stopEvalAt, c.resume = 0, true
	if err := run(context.Background(), c, io.Discard, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"model.safetensors", "optimizer-0.safetensors"} {
		if !bytes.Equal(latestFile(t, filepath.Join(dir, "straight"), f), latestFile(t, filepath.Join(dir, "stopped"), f)) {
			t.Errorf("%s differs between the straight and the resumed run", f)
		}
	}
	a, b := latestState(t, filepath.Join(dir, "straight")), latestState(t, filepath.Join(dir, "stopped"))
	for _, k := range []string{"scaler", "history", "progress"} {
		if !bytes.Equal(a[k], b[k]) {
			t.Errorf("section %s differs:\n%s\n%s", k, a[k], b[k])
		}
	}
}

func latestDir(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "LATEST"))
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, strings.SplitN(string(b), "\n", 2)[0])
}

func latestFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(latestDir(t, dir), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func latestState(t *testing.T, dir string) map[string]json.RawMessage {
	t.Helper()
	var st struct {
		Extra map[string]json.RawMessage `json:"extra"`
	}
	if err := json.Unmarshal(latestFile(t, dir, "state.json"), &st); err != nil {
		t.Fatal(err)
	}
	return st.Extra
}

// TestJSONNonFinite: a NaN or infinite loss still prints its line, the
// value as null.
func TestJSONNonFinite(t *testing.T) {
	tr := &trainer{c: config{json: true}}
	var out bytes.Buffer
	tr.report(evaluation{Iter: 7, TrainLoss: jsonnum.Float(math.NaN()), ValLoss: jsonnum.Float(math.Inf(1)), Scale: 1}, &out, io.Discard)
	var e map[string]any
	if err := json.Unmarshal(out.Bytes(), &e); err != nil {
		t.Fatalf("%q: %v", out.String(), err)
	}
	if e["iter"] != 7.0 || e["train_loss"] != nil || e["val_loss"] != nil {
		t.Errorf("got %v, want iteration 7 and null losses", e)
	}
}

// TestResumeOtherVocabulary: a checkpoint resumed on a text whose
// vocabulary differs, even in size alike, is an error naming the first
// difference; it once trained on, every id read as another character.
func TestResumeOtherVocabulary(t *testing.T) {
	devtest.Open(t)
	dir := t.TempDir()
	text, err := os.ReadFile("../../testdata/tinyshakespeare/input.txt")
	if err != nil {
		t.Fatal(err)
	}
	// The same text with 'z' written as '#': as many characters, another set.
	other := filepath.Join(dir, "other.txt")
	if err := os.WriteFile(other, bytes.ReplaceAll(text, []byte("z"), []byte("#")), 0o644); err != nil {
		t.Fatal(err)
	}
	c := tiny()
	c.iters, c.checkpoint = 2, filepath.Join(dir, "ckpt")
	if err := run(context.Background(), c, io.Discard, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	c.iters, c.resume, c.data = 4, true, other
	err = run(context.Background(), c, io.Discard, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "another vocabulary") || !strings.Contains(err.Error(), "in the checkpoint") {
		t.Errorf("resume on another vocabulary: got %v, want an error naming the difference", err)
	}
	c.data = tiny().data // the same text resumes
	if err := run(context.Background(), c, io.Discard, io.Discard, io.Discard); err != nil {
		t.Errorf("resume on the same text: %v", err)
	}
}

// TestEvalRates: with an evaluation after every iteration, the reported
// ms/iter counts the device's time, not only the host's recording (which
// read as 0.0 ms/iter and 1.3M tokens/s): the iterations' reported times
// add up to more than 0.2% of the run's wall time (5-6% on lavapipe,
// 0.02% when only the recording was counted).
func TestEvalRates(t *testing.T) {
	devtest.Open(t)
	c := tiny()
	c.evalEvery, c.iters = 1, 12
	start := time.Now()
	evs, _ := runJSON(t, c)
	wall := time.Since(start)
	var sum float64
	for _, e := range evs[2:] { // after the first iteration's compiles
		sum += e["ms_per_iter"]
	}
	if sum < 0.002*float64(wall.Milliseconds()) {
		t.Errorf("the iterations' ms_per_iter add up to %.3f ms of a %v run: the device's time is not counted", sum, wall)
	}
}
