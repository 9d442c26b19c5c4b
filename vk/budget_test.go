//go:build cgo

package vk_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// TestMemoryBudget allocates more than the device's memory heap holds, in
// buffers it never writes, and checks that the allocation past the heap
// fails with ErrOutOfDeviceMemory, naming the heap's size and what was
// asked, and that freeing makes room again, also when the freed buffer is
// still used by recorded work. Drivers that map host memory give it lazily,
// so the test touches almost none of it; on a driver that fills every
// allocation (SwiftShader) the heap is made to look 96 MiB large instead.
func TestMemoryBudget(t *testing.T) {
	d := devtest.Open(t)
	info := d.Info()
	rss := residentBytes(t)
	probe, err := d.Alloc(64 << 20) // a memory block of its own
	if err != nil {
		t.Fatal(err)
	}
	filled := residentBytes(t)-rss > 32<<20
	heap := -1 // the heap buffers come from
	for i, u := range d.Memory() {
		if u.Used > 0 {
			heap = i
		}
	}
	if heap < 0 {
		t.Fatalf("a 64 MiB buffer is in no heap: %+v", d.Memory())
	}
	if err := probe.Free(); err != nil {
		t.Fatal(err)
	}
	if filled {
		vk.SetHeapSize(d, heap, 96<<20)
		t.Logf("%s fills every allocation: its %d-byte heap %d made to look 96 MiB large", info.Name, info.Heaps[heap].Size, heap)
	}
	size := d.Memory()[heap].Size
	chunk := int64(size / 2)
	if m := int64(info.MaxMemoryAllocationSize) / 4 * 3; m > 0 && m < chunk {
		chunk = m // not the limit itself: SwiftShader pads buffers past it
	}
	chunk -= chunk % d.Alignment()

	var bufs []*vk.Buffer
	t.Cleanup(func() {
		for _, b := range bufs {
			b.Free()
		}
	})
	for total := uint64(0); total <= size; total += uint64(chunk) {
		var b *vk.Buffer
		if b, err = d.Alloc(chunk); err != nil {
			break
		}
		bufs = append(bufs, b)
	}
	if err == nil {
		t.Fatalf("%d buffers of %d bytes allocated on a %d-byte heap", len(bufs), chunk, size)
	}
	if !errors.Is(err, vk.ErrOutOfDeviceMemory) {
		t.Errorf("allocation past the heap: %v, want %v", err, vk.ErrOutOfDeviceMemory)
	}
	for _, w := range []string{strconv.FormatUint(size, 10), strconv.FormatInt(chunk, 10)} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %s", err, w)
		}
	}
	t.Logf("%d buffers of %d bytes on a %d-byte heap, then: %v", len(bufs), chunk, size, err)
	if u := d.Memory()[heap]; u.Used > u.Budget || u.Budget > u.Size {
		t.Errorf("heap %d: %+v: used over budget, or budget over size", heap, u)
	}
	if len(bufs) == 0 {
		t.Skipf("no %d-byte buffer fits this process's memory budget on %s", chunk, info.Name)
	}

	// Free a buffer that recorded work still uses: its memory comes back
	// once that work is done, which Alloc waits for rather than fail.
	last := bufs[len(bufs)-1]
	if err := d.Fill(last, 0, 256, 1); err != nil {
		t.Fatal(err)
	}
	bufs = bufs[:len(bufs)-1]
	if err := last.Free(); err != nil {
		t.Fatal(err)
	}
	// Another size, so that the freed block is not simply reused.
	half, err := d.Alloc(chunk / 2)
	if err != nil {
		t.Fatalf("after freeing %d bytes, allocate %d: %v", chunk, chunk/2, err)
	}
	bufs = append(bufs, half)
	if grown := residentBytes(t) - rss; !filled && grown > 256<<20 {
		t.Errorf("resident memory grew by %d bytes: allocations were touched", grown)
	}
}

// residentBytes is the process's resident set size, from /proc.
func residentBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(b), &size, &resident); err != nil {
		t.Fatalf("/proc/self/statm: %v", err)
	}
	return resident * int64(os.Getpagesize())
}
