package reliability_test

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// TestMemoryFlat: a long training loop (Linear 8->4, MSE, SGD and a loss
// scaler under autocast), one Graph per step released each step, keeps
// device memory exactly flat, and the Go heap and the process's resident
// memory within small margins, from step 1,000 to the last step.
func TestMemoryFlat(t *testing.T) {
	steps := 10000
	if testing.Short() {
		steps = 2000
	}
	const (
		first     = 1000
		heapSlack = 2 << 20
		// The process's resident memory includes what a CPU driver
		// allocates, which Stats cannot see; it is noisier than the heap.
		rssSlack = 64 << 20
	)
	d := devtest.Open(t)
	m := newTiny(t, d, 1, true)
	type snapshot struct {
		dev       vk.Stats
		heap, rss uint64
	}
	snap := func() snapshot {
		if err := d.Wait(); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return snapshot{d.Stats(), ms.HeapAlloc, rss()}
	}
	start := time.Now()
	var at1k snapshot
	for i := 1; i <= steps; i++ {
		g, loss, _, err := m.step()
		if err == nil && i%first == 0 {
			_, err = loss.Value().Item() // an error a tensor carries shows here
		}
		g.Release()
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if i == first {
			at1k = snap()
		}
	}
	end := snap()
	elapsed := time.Since(start)
	t.Logf("%d steps in %v (%.0f steps/s)", steps, elapsed.Round(time.Millisecond), float64(steps)/elapsed.Seconds())
	for _, s := range []struct {
		step int
		snapshot
	}{{first, at1k}, {steps, end}} {
		t.Logf("step %5d: device %d bytes in %d blocks, %d live buffers holding %d bytes; Go heap %d bytes (%.2f MiB); process RSS %.1f MiB",
			s.step, s.dev.DeviceBytes, s.dev.MemoryBlocks, s.dev.LiveBuffers, s.dev.BufferBytes, s.heap, float64(s.heap)/(1<<20), float64(s.rss)/(1<<20))
	}
	a, b := at1k.dev, end.dev
	if a.DeviceBytes != b.DeviceBytes || a.MemoryBlocks != b.MemoryBlocks || a.LiveBuffers != b.LiveBuffers || a.BufferBytes != b.BufferBytes {
		t.Errorf("device memory grew from step %d to %d: %+v -> %+v", first, steps, a, b)
	}
	if a.Allocations != b.Allocations || a.Pipelines != b.Pipelines {
		t.Errorf("device allocations %d -> %d, pipelines %d -> %d: want none after step %d",
			a.Allocations, b.Allocations, a.Pipelines, b.Pipelines, first)
	}
	if end.rss > at1k.rss+rssSlack {
		t.Errorf("process RSS grew from %d to %d bytes, over the %d-byte margin: the driver's memory grows", at1k.rss, end.rss, rssSlack)
	}
	if end.heap > at1k.heap+heapSlack {
		t.Errorf("Go heap grew from %d to %d bytes (+%d), over the %d-byte margin",
			at1k.heap, end.heap, int64(end.heap)-int64(at1k.heap), heapSlack)
	}
}

// rss is the process's resident memory in bytes (0 where /proc is missing):
// on a CPU driver it includes the driver's memory, which Stats does not see.
func rss() uint64 {
	raw, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, resident uint64
	if _, err := fmt.Sscan(string(raw), &size, &resident); err != nil {
		return 0
	}
	return resident * uint64(os.Getpagesize())
}
