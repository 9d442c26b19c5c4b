package progress

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"
)

// TestPlain: a writer that is not a terminal gets whole lines, never a
// carriage return: the first step, one line per Every, and the last step.
func TestPlain(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, Options{Total: 10, Description: "train", Unit: "iters", Every: time.Minute})
	clock := b.start
	b.now = func() time.Time { return clock }
	for i := range 10 {
		clock = clock.Add(10 * time.Second)
		if i == 4 {
			b.Describe("loss 1.5")
		}
		b.Add(1)
	}
	b.Finish()
	b.Finish()
	out := buf.String()
	if strings.ContainsRune(out, '\r') || strings.Contains(out, "\x1b") {
		t.Fatalf("plain output holds a redraw: %q", out)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	// Step 1 (first), step 7 (a minute after it), step 10 (last).
	want := []string{
		"train  1/10 (10%)  0.10 iters/s  elapsed 10s  ETA 1m30s",
		"loss 1.5  7/10 (70%)  0.10 iters/s  elapsed 1m10s  ETA 30s",
		"loss 1.5  10/10 (100%)  0.10 iters/s  elapsed 1m40s",
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d: got %q, want %q", i, lines[i], want[i])
		}
	}
}

// TestResumed: a bar started part-way counts the rate from where it began,
// and Finish before the end writes where it stopped.
func TestResumed(t *testing.T) {
	var buf bytes.Buffer
	b := New(&buf, Options{Total: 100, Done: 50, Every: time.Hour})
	clock := b.start
	b.now = func() time.Time { return clock }
	clock = clock.Add(2 * time.Second)
	b.Add(1)
	clock = clock.Add(2 * time.Second)
	b.Add(1)
	b.Finish()
	want := "51/100 (51%)  0.50 steps/s  elapsed 2s  ETA 1m38s\n52/100 (52%)  0.50 steps/s  elapsed 4s  ETA 1m36s\n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

func TestIsTerminal(t *testing.T) {
	if IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("a file is a terminal")
	}
}
