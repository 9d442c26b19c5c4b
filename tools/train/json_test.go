package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
)

// TestJSON: -json writes one object per epoch, and nothing else, to stdout
// (one epoch: each is minutes on SwiftShader).
func TestJSON(t *testing.T) {
	devtest.Open(t)
	c := base()
	c.epochs, c.json = 1, true
	var out, text bytes.Buffer
	if err := run(context.Background(), c, &out, &text); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("stdout holds %d lines, want 1: %q", len(lines), out.String())
	}
	for i, l := range lines {
		var e map[string]float64
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("line %d %q: %v", i, l, err)
		}
		for _, k := range []string{"epoch", "train_loss", "test_accuracy", "samples_per_s", "scale"} {
			if _, ok := e[k]; !ok {
				t.Errorf("line %d %q has no %s", i, l, k)
			}
		}
		if e["epoch"] != float64(i+1) || !(e["test_accuracy"] > 0.5) || !(e["samples_per_s"] > 0) || !(e["scale"] > 0) {
			t.Errorf("line %d: %q", i, l)
		}
	}
	if !strings.Contains(text.String(), "device") {
		t.Errorf("the device line is not on stderr: %q", text.String())
	}
}

func TestModelFlags(t *testing.T) {
	for _, tc := range []struct {
		edit func(*config)
		want string
	}{
		{func(c *config) { c.model = "resnet" }, `unknown -model "resnet"`},
		{func(c *config) { c.gamma = 1.5 }, "-gamma 1.5"},
		{func(c *config) { c.lr = -1 }, "-lr -1"},
	} {
		c := base()
		tc.edit(&c)
		if err := run(context.Background(), c, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want an error containing %q", err, tc.want)
		}
	}
}
