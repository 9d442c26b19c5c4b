//go:build mpi

package dist_test

import (
	"errors"
	"math"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/internal/devtest"
)

// TestMPI runs under mpirun (scripts/test-mpi.sh), one device a process:
// collectives, a data-parallel run against this process's own run of the
// whole batch on one device, a planted inf, and the buckets reduced during
// backward against after it. Without mpirun it skips.
func TestMPI(t *testing.T) {
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" {
		t.Skip("not launched by mpirun: scripts/test-mpi.sh runs it")
	}
	g, err := dist.NewMPI(dist.Options{Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	n, r := g.Size(), g.Rank()
	t.Logf("rank %d of %d", r, n)

	t.Run("collectives", func(t *testing.T) {
		x := []float32{float32(r), 1}
		if err := g.AllReduceSum(x); err != nil {
			t.Fatal(err)
		}
		if want := float32(n * (n - 1) / 2); x[0] != want || x[1] != float32(n) {
			t.Errorf("sum %v, want [%g %d]", x, want, n)
		}
		b := []float32{float32(r) + 7}
		if err := g.Broadcast(b, n-1); err != nil {
			t.Fatal(err)
		}
		if b[0] != float32(n-1)+7 {
			t.Errorf("broadcast %v", b)
		}
		if m, err := g.Max(float32(-r)); err != nil || m != 0 {
			t.Errorf("max %g, %v", m, err)
		}
		if err := g.Barrier(); err != nil {
			t.Fatal(err)
		}
	})

	d := devtest.Open(t)
	t.Logf("rank %d on %s, tier %s", r, d.Info().Name, d.Tier())
	set := loadMNIST(t)
	t.Run("matches single", func(t *testing.T) {
		useSGD(t)
		for _, c := range []struct {
			name string
			amp  bool
			tol  float64
		}{{"fp32", false, 1e-6}, {"fp16", true, 1e-3}} {
			autocast = c.amp
			ref, err := train(d, dist.Single{}, set, steps, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := train(d, g, set, steps, nil)
			if err != nil {
				t.Fatal(err)
			}
			diff := maxDiff(got.weights, ref.weights)
			t.Logf("%s: largest weight difference from one device: %g", c.name, diff)
			if diff > c.tol {
				t.Errorf("%s: data-parallel weights differ from one device's by %g, over %g", c.name, diff, c.tol)
			}
			if diff := sameOnAllRanks(t, g, got.weights); diff != 0 {
				t.Errorf("%s: ranks differ from rank 0 by up to %g", c.name, diff)
			}
		}
		autocast = true
	})

	t.Run("planted inf", func(t *testing.T) {
		got, err := train(d, g, set, 4, []plant{{rank: n - 1, step: 1}, {rank: 0, step: 2, afterReduce: true}})
		if err != nil {
			t.Fatal(err)
		}
		if want := []bool{false, true, true, false}; !slices.Equal(got.skipped, want) {
			t.Errorf("rank %d skipped %v, want %v", r, got.skipped, want)
		}
		if diff := sameOnAllRanks(t, g, got.weights); diff != 0 {
			t.Errorf("ranks differ from rank 0 by up to %g", diff)
		}
	})

	t.Run("overlap", func(t *testing.T) {
		useSGD(t)
		after, err := train(d, g, set, 4, nil)
		if err != nil {
			t.Fatal(err)
		}
		overlap = true
		during, err := train(d, g, set, 4, nil)
		overlap = false
		if err != nil {
			t.Fatal(err)
		}
		if diff := maxDiff(during.weights, after.weights); diff != 0 {
			t.Errorf("rank %d: overlapped weights differ from those reduced after backward by %g", r, diff)
		}
		if diff := sameOnAllRanks(t, g, during.weights); diff != 0 {
			t.Errorf("overlapped ranks differ from rank 0 by up to %g", diff)
		}
	})
}

// sameOnAllRanks returns the largest difference of any rank's weights from
// rank 0's.
func sameOnAllRanks(t *testing.T, g dist.Group, w [][]float32) float64 {
	var flat []float32
	for _, v := range w {
		flat = append(flat, v...)
	}
	root := slices.Clone(flat)
	if err := g.Broadcast(root, 0); err != nil {
		t.Fatal(err)
	}
	m := 0.0
	for i := range flat {
		m = max(m, math.Abs(float64(flat[i]-root[i])))
	}
	all, err := g.Max(float32(m))
	if err != nil {
		t.Fatal(err)
	}
	return float64(all)
}

// TestMPIHungPeer runs under mpirun with DIST_FAULT=1 (scripts/test-mpi.sh
// fault): the last rank stops taking part (it sleeps, then exits without
// finalizing), and rank 0's all-reduce fails with ErrTimeout after the
// group's timeout instead of waiting for ever. mpirun then reports the
// ranks that exited without finalizing, as it must.
func TestMPIHungPeer(t *testing.T) {
	if os.Getenv("OMPI_COMM_WORLD_SIZE") == "" || os.Getenv("DIST_FAULT") == "" {
		t.Skip("run by scripts/test-mpi.sh fault, under mpirun")
	}
	g, err := dist.NewMPI(dist.Options{Timeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if g.Rank() == g.Size()-1 {
		time.Sleep(6 * time.Second)
		os.Exit(0) // a peer gone without a word
	}
	err = g.AllReduceSum([]float32{1})
	t.Logf("rank %d: %v", g.Rank(), err)
	if !errors.Is(err, dist.ErrTimeout) {
		t.Errorf("rank %d got %v, want ErrTimeout", g.Rank(), err)
	}
	if err := g.Barrier(); err == nil {
		t.Errorf("a broken group's Barrier succeeded")
	}
	g.Close() // returns without finalizing: the process exits
}
