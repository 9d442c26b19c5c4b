//go:build mpi

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/checkpoint"
	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/tools/internal/ranks"
	"github.com/vkamp/vkamp/vk"
)

// TestMPIGPT runs under mpirun (scripts/test-mpi.sh), one device a
// process: the tiny GPT trained by run over every rank, each with its rows
// of every batch, against this process's own run of the whole batch on its
// device, in fp32 and fp16 AMP. Rank 0 reports (its JSON and checkpoint)
// and broadcasts them, so every rank compares them with its own run: with
// mixed drivers, the job against each driver. Without mpirun it skips.
//
// The evaluations' losses (every 5 iterations) and the final weights agree
// within tolerances that TestDevices explains (two halves' sums round
// otherwise, Adam's step of a gradient near 0 can flip, a half batch's fp16
// gradients overflow at another scale, so the ranks may skip one iteration
// more or less). Measured on 2 ranks, largest differences in loss and in
// weights: fp32 2e-5 and 2e-5 on lavapipe, 3.8e-6 and 1.2e-5 on
// SwiftShader, 1.1e-4 and 1.2e-4 with one of each (tolerance 1e-3 each);
// fp16 AMP 0.029 and 0.019 on lavapipe, 0.029 and 0.013 on SwiftShader,
// 0.036 and 0.019 with one of each (tolerance 0.1 and 0.05).
func TestMPIGPT(t *testing.T) {
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" {
		t.Skip("not launched by mpirun: scripts/test-mpi.sh runs it")
	}
	g, err := dist.NewMPI(dist.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	d := devtest.Open(t)
	t.Logf("rank %d of %d on %s, tier %s", g.Rank(), g.Size(), d.Info().Name, d.Tier())
	idx := strconv.Itoa(d.Info().Index)
	t.Cleanup(func() { openRanks = ranks.Open })
	dir := t.TempDir()
	tols := map[string]struct{ loss, weight float64 }{"f32": {1e-3, 1e-3}, "f16": {0.1, 0.05}}
	for _, precision := range []string{"f32", "f16"} {
		c := tiny()
		c.precision, c.device, c.evalEvery = precision, idx, 5
		openRanks = openOn(dist.Single{})
		c.checkpoint = filepath.Join(dir, precision+"-one")
		one := runRank(t, c, true)
		openRanks = openOn(keepOpen{g})
		c.checkpoint = filepath.Join(dir, precision+"-mpi")
		all := runRank(t, c, g.Rank() == 0)
		if g.Rank() != 0 {
			all = make([]float32, len(one))
		} else if len(all) != len(one) {
			t.Fatalf("%s: %d numbers from the ranks, %d from one device", precision, len(all), len(one))
		}
		if err := g.Broadcast(all, 0); err != nil {
			t.Fatal(err)
		}
		evals := 3 * (c.iters/c.evalEvery + 1)
		loss, weight := 0.0, 0.0
		for i := range one {
			diff := math.Abs(float64(all[i]) - float64(one[i]))
			switch {
			case i >= evals:
				weight = max(weight, diff)
			case i%3 == 2: // skipped iterations so far
				if diff > 1 {
					t.Errorf("%s: evaluation %d: %g skipped by the ranks, %g by one device", precision, i/3, all[i], one[i])
				}
			default:
				loss = max(loss, diff)
			}
		}
		t.Logf("%s: largest loss difference from one device %g (final val loss %g on one, %g on %d ranks), largest weight difference %g",
			precision, loss, one[evals-2], all[evals-2], g.Size(), weight)
		if tol := tols[precision]; loss > tol.loss || weight > tol.weight {
			t.Errorf("%s: the ranks' run differs from one device's by %g in loss (tolerance %g), %g in weights (%g)",
				precision, loss, tol.loss, weight, tol.weight)
		}
	}
}

// keepOpen is a group whose Close leaves it open, for run to close as it
// closes its own.
type keepOpen struct{ dist.Group }

func (keepOpen) Close() error { return nil }

// openOn returns an openRanks that opens one rank on g.
func openOn(g dist.Group) func(string, string, vk.Options, dist.Options) ([]ranks.Rank, error) {
	return func(device, _ string, o vk.Options, _ dist.Options) ([]ranks.Rank, error) {
		o.Device = device
		d, err := vk.Open(o)
		if err != nil {
			return nil, err
		}
		return []ranks.Rank{{D: d, G: g}}, nil
	}
}

// runRank runs c with -json and, when this rank reports, returns its
// evaluations (train loss, val loss and iterations skipped so far, each)
// followed by the checkpoint's final weights, by name.
func runRank(t *testing.T, c config, reports bool) []float32 {
	t.Helper()
	c.json = true
	var out, log bytes.Buffer
	if err := run(context.Background(), c, &out, &log, io.Discard); err != nil {
		t.Fatalf("%s: %v\n%s", c.precision, err, log.String())
	}
	if !reports {
		return nil
	}
	var v []float32
	for i, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		var e evaluation
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %d of stdout: %q: %v", i, line, err)
		}
		v = append(v, float32(e.TrainLoss), float32(e.ValLoss), float32(e.Skipped))
	}
	f, err := checkpoint.Read(filepath.Join(latestDir(t, c.checkpoint), "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(f.Tensors))
	for name := range f.Tensors {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		ht := f.Tensors[name]
		if ht.DType != tensor.Float32 {
			t.Fatalf("%s is %v, want float32 weights", name, ht.DType)
		}
		for k := 0; k < len(ht.Data); k += 4 {
			v = append(v, math.Float32frombits(binary.LittleEndian.Uint32(ht.Data[k:])))
		}
	}
	return v
}
