package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// TestDevices: -devices 0,0 (two ranks on the test device, each with half
// of every batch) trains an epoch as one device does: the same loss and
// accuracy to within fp16 rounding (a half batch's weight gradient is
// rounded to fp16 before the ranks' are summed), and rank 0 writes the
// checkpoint.
func TestDevices(t *testing.T) {
	d := devtest.Open(t)
	if testing.Short() || !strings.Contains(strings.ToLower(d.Info().DriverName), "llvmpipe") && d.Info().Type == vk.TypeCPU {
		t.Skip("two epochs take minutes on SwiftShader; dist's tests run the same loop on it")
	}
	name := strconv.Itoa(d.Info().Index) // names may hold commas
	epoch := func(devices string, dir string) map[string]float64 {
		c := base()
		c.epochs, c.json, c.devices, c.checkpoint = 1, true, devices, dir
		var out bytes.Buffer
		if err := run(context.Background(), c, &out, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		var e map[string]float64
		if err := json.Unmarshal(out.Bytes(), &e); err != nil {
			t.Fatalf("%q: %v", out.String(), err)
		}
		return e
	}
	one := epoch(name, "")
	dir := t.TempDir()
	two := epoch(name+","+name, dir)
	t.Logf("one device: %v; two: %v", one, two)
	if math.Abs(one["train_loss"]-two["train_loss"]) > 2e-3 || math.Abs(one["test_accuracy"]-two["test_accuracy"]) > 0.005 {
		t.Errorf("two devices: %v, one: %v", two, one)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) == 0 {
		t.Errorf("no checkpoint in %s", dir)
	}
}
