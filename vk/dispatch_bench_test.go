package vk_test

import (
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// BenchmarkDispatchHost measures the host cost of recording one small
// dispatch (a chain of copies through four buffers, so that every other
// launch needs a barrier), draining the device every 128 launches outside
// the timer. Run with -benchmem: recording should not allocate.
func BenchmarkDispatchHost(b *testing.B) {
	d := devtest.Open(b)
	bufs := []*vk.Buffer{alloc(b, d, 4096), alloc(b, d, 4096), alloc(b, d, 4096), alloc(b, d, 4096)}
	k := kernel(b, d, "copy32")
	grid, pc := groups(d, 1024), push(1024)
	i := 0
	for b.Loop() {
		if err := d.Dispatch(k, grid, pc, bufs[i%4], bufs[(i+1)%4]); err != nil {
			b.Fatal(err)
		}
		if i++; i%128 == 0 {
			b.StopTimer()
			if err := d.Wait(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
}
