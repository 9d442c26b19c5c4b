package vk_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/shaders"
	"github.com/vkamp/vkamp/vk"
)

// stagingOpts sends every host transfer through a 1 MiB staging ring, so
// that large transfers take many chunks and the ring wraps around.
var stagingOpts = vk.Options{ForceStaging: true, StagingSize: 1 << 20}

var modes = []struct {
	name string
	opts vk.Options
}{
	{"default", vk.Options{}},
	{"staging", stagingOpts},
}

func alloc(t testing.TB, d *vk.Device, n int64) *vk.Buffer {
	t.Helper()
	b, err := d.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Free() })
	return b
}

func kernel(t testing.TB, d *vk.Device, op string) *vk.Kernel {
	t.Helper()
	k, err := buildKernel(d, op)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// fill32 records setting every 32-bit word of b to value.
func fill32(t testing.TB, d *vk.Device, b *vk.Buffer, value uint32) {
	t.Helper()
	n := int(b.Size() / 4)
	if err := d.Dispatch(kernel(t, d, "fill32"), groups(d, n), push(uint32(n), value), b); err != nil {
		t.Fatal(err)
	}
}

// copy32 records copying all 32-bit words of src to dst.
func copy32(t testing.TB, d *vk.Device, src, dst *vk.Buffer) {
	t.Helper()
	n := int(src.Size() / 4)
	if err := d.Dispatch(kernel(t, d, "copy32"), groups(d, n), push(uint32(n)), src, dst); err != nil {
		t.Fatal(err)
	}
}

func randBytes(seed uint64, n int) []byte {
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	b := make([]byte, n)
	rand.NewChaCha8(s).Read(b)
	return b
}

func write(t testing.TB, b *vk.Buffer, off int64, data []byte) {
	t.Helper()
	if err := b.Write(off, data); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, b *vk.Buffer, off int64, n int) []byte {
	t.Helper()
	out := make([]byte, n)
	if err := b.Read(off, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%s: got %d bytes, want %d", what, len(got), len(want))
	}
	bad, first := 0, -1
	for i := range got {
		if got[i] != want[i] {
			if first < 0 {
				first = i
			}
			bad++
		}
	}
	t.Fatalf("%s: %d of %d bytes differ, first at %d: got %#02x, want %#02x", what, bad, len(got), first, got[first], want[first])
}

func checkWords(t testing.TB, what string, b *vk.Buffer, want uint32) {
	t.Helper()
	raw := read(t, b, 0, int(b.Size()))
	for i := 0; i+4 <= len(raw); i += 4 {
		if g := binary.LittleEndian.Uint32(raw[i:]); g != want {
			t.Fatalf("%s: word %d is %d, want %d", what, i/4, g, want)
		}
	}
}

func wantErr(t testing.TB, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: got error %v, want %v", what, err, target)
	}
}

// TestRoundTrip writes random bytes and reads them back at many sizes, with
// mapped memory and through a small staging ring.
func TestRoundTrip(t *testing.T) {
	sizes := []int{1, 3, 4, 5, 4095, 65537, 1 << 20, 256 << 20}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			d := devtest.Open(t, m.opts)
			for i, n := range sizes {
				b, err := d.Alloc(int64(n))
				if err != nil {
					t.Fatalf("alloc %d: %v", n, err)
				}
				want := randBytes(uint64(i), n)
				write(t, b, 0, want)
				got := read(t, b, 0, n)
				checkBytes(t, fmt.Sprintf("%d bytes", n), got, want)
				if err := b.Free(); err != nil {
					t.Fatal(err)
				}
			}
			if s := d.Stats(); s.LiveBuffers != 0 {
				t.Errorf("%d live buffers after freeing all", s.LiveBuffers)
			}
		})
	}
}

// TestOffsets writes and reads parts of a buffer at non-zero offsets.
func TestOffsets(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			d := devtest.Open(t, m.opts)
			for _, n := range []int{4096, 3 << 20} { // one chunk, and several staging chunks
				b := alloc(t, d, int64(n))
				want := randBytes(1, n)
				write(t, b, 0, want)
				for i, part := range []struct{ off, n int }{{1, 1}, {5, 3}, {17, 1000}, {n - 7, 7}, {n / 3, n / 2}, {4093, n - 4093}} {
					data := randBytes(uint64(100+i), part.n)
					write(t, b, int64(part.off), data)
					copy(want[part.off:], data)
					got := read(t, b, int64(part.off), part.n)
					checkBytes(t, fmt.Sprintf("%d-byte buffer: read [%d,+%d)", n, part.off, part.n), got, want[part.off:part.off+part.n])
				}
				checkBytes(t, fmt.Sprintf("%d-byte buffer", n), read(t, b, 0, n), want)
				for _, off := range []int{0, 3, n / 2, n - 1} { // reads of odd lengths at odd offsets
					checkBytes(t, fmt.Sprintf("read at %d", off), read(t, b, int64(off), n-off), want[off:])
				}
				b.Free()
			}
		})
	}
}

// TestStagingRingReuse makes the staging ring wrap around while older chunks
// of different sizes are still in flight: a new chunk must not overwrite one
// whose copy has not run yet.
func TestStagingRingReuse(t *testing.T) {
	d := devtest.Open(t, stagingOpts)
	const ring = 1 << 20
	slow := alloc(t, d, 32<<20) // a fill of it keeps the queue busy for a while
	a, x, y, z := alloc(t, d, ring-128<<10), alloc(t, d, 128<<10), alloc(t, d, 256<<10), alloc(t, d, 800<<10)
	wa, wx, wy, wz := randBytes(1, int(a.Size())), randBytes(2, int(x.Size())), randBytes(3, int(y.Size())), randBytes(4, int(z.Size()))

	write(t, a, 0, wa) // the ring's head ends 128 KiB before its end
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	fill32(t, d, slow, 1)
	write(t, x, 0, wx) // the ring's last 128 KiB
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	fill32(t, d, slow, 2)
	write(t, y, 0, wy) // wraps: the ring's first 256 KiB
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	write(t, z, 0, wz) // wraps again, over y's chunk
	checkBytes(t, "x", read(t, x, 0, len(wx)), wx)
	checkBytes(t, "y", read(t, y, 0, len(wy)), wy)
	checkBytes(t, "z", read(t, z, 0, len(wz)), wz)
	checkBytes(t, "a", read(t, a, 0, len(wa)), wa)
	checkWords(t, "slow", slow, 2)
}

// TestManySmallBuffers keeps 100,000 small buffers alive at once, cut from a
// few memory blocks.
func TestManySmallBuffers(t *testing.T) {
	d := devtest.Open(t)
	const n = 100_000
	before := d.Stats()
	bufs := make([]*vk.Buffer, n)
	pattern := func(i int, p []byte) {
		for j := range p {
			p[j] = byte(i*131 + j*7 + i>>8)
		}
		binary.LittleEndian.PutUint32(p, uint32(i)) // distinct for every buffer
	}
	var scratch [64]byte
	for i := range bufs {
		b, err := d.Alloc(int64(16 + i%49))
		if err != nil {
			t.Fatalf("buffer %d: %v", i, err)
		}
		bufs[i] = b
		p := scratch[:b.Size()]
		pattern(i, p)
		write(t, b, 0, p)
	}
	s := d.Stats()
	if s.LiveBuffers != before.LiveBuffers+n {
		t.Errorf("%d live buffers, want %d", s.LiveBuffers, before.LiveBuffers+n)
	}
	if a := s.Allocations - before.Allocations; a >= 50 {
		t.Errorf("%d VkDeviceMemory allocations for %d small buffers", a, n)
	}
	t.Logf("%d buffers in %d memory blocks (%d bytes reserved)", n, s.MemoryBlocks, s.BufferBytes)
	var got [64]byte
	for i, b := range bufs {
		g := got[:b.Size()]
		if err := b.Read(0, g); err != nil {
			t.Fatal(err)
		}
		p := scratch[:b.Size()]
		pattern(i, p)
		if !bytes.Equal(g, p) {
			t.Fatalf("buffer %d: got %x, want %x", i, g, p)
		}
	}
	for _, b := range bufs {
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
	}
	if s := d.Stats(); s.LiveBuffers != 0 || s.BufferBytes != 0 {
		t.Errorf("after freeing: %d live buffers, %d bytes", s.LiveBuffers, s.BufferBytes)
	}
}

// TestDependentChain runs 1,000 dispatches each of which depends on the one
// before: one barrier between every pair, and the right answer.
func TestDependentChain(t *testing.T) {
	d := devtest.Open(t)
	const steps, words = 1000, 1024
	a := alloc(t, d, 4*words)
	out := make([]*vk.Buffer, steps/2)
	for j := range out {
		out[j] = alloc(t, d, 4*words)
	}
	fill, cp := kernel(t, d, "fill32"), kernel(t, d, "copy32")
	grid := groups(d, words)
	before := d.Stats()
	for i := range steps {
		var err error
		if i%2 == 0 {
			err = d.Dispatch(fill, grid, push(words, uint32(i)), a)
		} else {
			err = d.Dispatch(cp, grid, push(words), a, out[i/2])
		}
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	after := d.Stats()
	if got := after.Barriers - before.Barriers; got != steps-1 {
		t.Errorf("%d barriers for %d dependent dispatches, want %d", got, steps, steps-1)
	}
	if got := after.Dispatches - before.Dispatches; got != steps {
		t.Errorf("%d dispatches recorded, want %d", got, steps)
	}
	for j, b := range out {
		checkWords(t, fmt.Sprintf("out[%d]", j), b, uint32(2*j))
	}
}

// TestIndependentDispatches checks that dispatches that touch distinct
// buffers are not separated by barriers.
func TestIndependentDispatches(t *testing.T) {
	d := devtest.Open(t)
	const n, words = 100, 256
	src, dst := make([]*vk.Buffer, n), make([]*vk.Buffer, n)
	for i := range n {
		src[i], dst[i] = alloc(t, d, 4*words), alloc(t, d, 4*words)
	}
	kernel(t, d, "fill32")
	kernel(t, d, "copy32")
	s0 := d.Stats()
	for i, b := range src {
		fill32(t, d, b, uint32(1000+i))
	}
	s1 := d.Stats()
	if got := s1.Barriers - s0.Barriers; got != 0 {
		t.Errorf("%d barriers among %d independent fills, want 0", got, n)
	}
	for i := range src {
		copy32(t, d, src[i], dst[i])
	}
	s2 := d.Stats()
	if got := s2.Barriers - s1.Barriers; got != 1 {
		t.Errorf("%d barriers before %d independent copies of filled buffers, want 1", got, n)
	}
	for i := range n {
		checkWords(t, fmt.Sprintf("src[%d]", i), src[i], uint32(1000+i))
		checkWords(t, fmt.Sprintf("dst[%d]", i), dst[i], uint32(1000+i))
	}
}

// TestErrors checks that bad requests return errors rather than panic.
func TestErrors(t *testing.T) {
	d := devtest.Open(t)
	_, err := d.Alloc(0)
	wantErr(t, "Alloc(0)", err, vk.ErrInvalidArgument)
	_, err = d.Alloc(-1)
	wantErr(t, "Alloc(-1)", err, vk.ErrInvalidArgument)
	_, err = d.Alloc(1 << 50)
	wantErr(t, "Alloc(1<<50)", err, vk.ErrOutOfDeviceMemory)

	b := alloc(t, d, 64)
	wantErr(t, "Read past the end", b.Read(60, make([]byte, 8)), vk.ErrInvalidArgument)
	wantErr(t, "Read at -1", b.Read(-1, make([]byte, 1)), vk.ErrInvalidArgument)
	wantErr(t, "Read at 65", b.Read(65, nil), vk.ErrInvalidArgument)
	wantErr(t, "Write past the end", b.Write(0, make([]byte, 65)), vk.ErrInvalidArgument)
	wantErr(t, "Write at -1", b.Write(-1, make([]byte, 1)), vk.ErrInvalidArgument)
	wantErr(t, "Write at 1<<62", b.Write(1<<62, make([]byte, 1)), vk.ErrInvalidArgument)

	fill, cp := kernel(t, d, "fill32"), kernel(t, d, "copy32")
	g := [3]uint32{1, 1, 1}
	wantErr(t, "Dispatch with no buffers", d.Dispatch(fill, g, push(16, 0)), vk.ErrInvalidArgument)
	wantErr(t, "Dispatch with 2 buffers for 1", d.Dispatch(fill, g, push(16, 0), b, b), vk.ErrInvalidArgument)
	wantErr(t, "Dispatch with 1 buffer for 2", d.Dispatch(cp, g, push(16), b), vk.ErrInvalidArgument)
	wantErr(t, "Dispatch with short push", d.Dispatch(fill, g, push(16), b), vk.ErrInvalidArgument)
	wantErr(t, "Dispatch with long push", d.Dispatch(cp, g, push(16, 0), b, b), vk.ErrInvalidArgument)
	wantErr(t, "Dispatch with nil push", d.Dispatch(cp, g, nil, b, b), vk.ErrInvalidArgument)
	wantErr(t, "Dispatch with nil kernel", d.Dispatch(nil, g, push(16, 0), b), vk.ErrInvalidArgument)
	wantErr(t, "Dispatch of 0 groups", d.Dispatch(fill, [3]uint32{0, 1, 1}, push(16, 0), b), vk.ErrInvalidArgument)
	wantErr(t, "Dispatch with nil buffer", d.Dispatch(fill, g, push(16, 0), nil), vk.ErrInvalidArgument)

	info := d.Info()
	var heap uint64
	for _, h := range info.Heaps {
		heap = max(heap, h.Size)
	}
	maxAlloc := min(info.MaxMemoryAllocationSize, heap) // what Alloc allows
	if over := int64(info.MaxStorageBufferRange) + 256; uint64(over) <= maxAlloc {
		big, err := d.Alloc(over)
		if err != nil {
			t.Fatalf("alloc %d bytes: %v", over, err)
		}
		wantErr(t, "Dispatch over maxStorageBufferRange", d.Dispatch(fill, g, push(16, 0), big), vk.ErrInvalidArgument)
		big.Free()
	} else {
		t.Logf("maxStorageBufferRange %d is not below the largest allocation %d: the over-range binding case does not apply",
			info.MaxStorageBufferRange, maxAlloc)
	}

	freed := alloc(t, d, 64)
	fill32(t, d, freed, 7)
	if err := freed.Free(); err != nil {
		t.Fatal(err)
	}
	if err := freed.Free(); err != nil {
		t.Errorf("second Free: %v", err)
	}
	wantErr(t, "Read of freed buffer", freed.Read(0, make([]byte, 4)), vk.ErrInvalidArgument)
	wantErr(t, "Write of freed buffer", freed.Write(0, make([]byte, 4)), vk.ErrInvalidArgument)
	wantErr(t, "Dispatch of freed buffer", d.Dispatch(fill, g, push(16, 0), freed), vk.ErrInvalidArgument)
	wantErr(t, "Copy from freed buffer", d.Copy(b, 0, freed, 0, 4), vk.ErrInvalidArgument)
	wantErr(t, "Fill of freed buffer", d.Fill(freed, 0, 4, 0), vk.ErrInvalidArgument)
	wantErr(t, "unaligned Fill", d.Fill(b, 2, 4, 0), vk.ErrInvalidArgument)
	wantErr(t, "Copy past the end", d.Copy(b, 0, b, 32, 40), vk.ErrInvalidArgument)
	wantErr(t, "overlapping Copy", d.Copy(b, 0, b, 8, 16), vk.ErrInvalidArgument)
	if err := d.Wait(); err != nil {
		t.Fatalf("Wait after rejected requests: %v", err)
	}

	// After Close everything says so.
	live := alloc(t, d, 64)
	fill32(t, d, live, 1)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	_, err = d.Alloc(64)
	wantErr(t, "Alloc after Close", err, vk.ErrClosed)
	wantErr(t, "Dispatch after Close", d.Dispatch(fill, g, push(16, 0), live), vk.ErrClosed)
	_, err = buildKernel(d, "copy16")
	wantErr(t, "Kernel after Close", err, vk.ErrClosed)
	_, err = d.Kernel(vk.KernelSource{Name: "x", SPIRV: []byte{3, 2, 0x23, 7}})
	wantErr(t, "Kernel(src) after Close", err, vk.ErrClosed)
	wantErr(t, "Read after Close", live.Read(0, make([]byte, 4)), vk.ErrClosed)
	wantErr(t, "Write after Close", live.Write(0, make([]byte, 4)), vk.ErrClosed)
	wantErr(t, "Copy after Close", d.Copy(b, 0, live, 0, 4), vk.ErrClosed)
	wantErr(t, "Fill after Close", d.Fill(live, 0, 4, 0), vk.ErrClosed)
	wantErr(t, "Wait after Close", d.Wait(), vk.ErrClosed)
	wantErr(t, "Sync after Close", d.Sync(), vk.ErrClosed)
	if err := d.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	for _, x := range []*vk.Buffer{live, b} {
		if err := x.Free(); err != nil {
			t.Errorf("Free after Close: %v", err)
		}
	}
	if s := d.Stats(); s.LiveBuffers != 0 {
		t.Errorf("%d live buffers after Close and Free", s.LiveBuffers)
	}
}

// TestOpenErrors checks Open's answers to bad options.
func TestOpenErrors(t *testing.T) {
	devtest.Open(t) // skips without Vulkan
	if d, err := vk.Open(vk.Options{Device: "no-such-device"}); !errors.Is(err, vk.ErrNoDevice) {
		d.Close()
		t.Errorf("Open(no-such-device): got %v, want %v", err, vk.ErrNoDevice)
	}
	if d, err := vk.Open(vk.Options{Device: "9999"}); !errors.Is(err, vk.ErrNoDevice) {
		d.Close()
		t.Errorf("Open(device 9999): got %v, want %v", err, vk.ErrNoDevice)
	}
	if d, err := vk.Open(vk.Options{Tier: "bogus"}); err == nil {
		d.Close()
		t.Error("Open(tier bogus) succeeded")
	}
	for _, tier := range []vk.Tier{vk.TierPacked, vk.TierStorage16, vk.TierFP16} {
		got, err := vk.ParseTier(tier.String())
		if err != nil || got != tier {
			t.Errorf("ParseTier(%q) = %v, %v; want %v", tier.String(), got, err, tier)
		}
	}
	if _, err := vk.ParseTier("bogus"); err == nil {
		t.Error("ParseTier(bogus) succeeded")
	}
}

// TestKernelCache checks that a kernel is built once per device.
func TestKernelCache(t *testing.T) {
	d := devtest.Open(t)
	t.Logf("device %s (%s), tier %s", d.Info().Name, d.Info().DriverName, d.Tier())
	k1, k2 := kernel(t, d, "fill32"), kernel(t, d, "fill32")
	if k1 != k2 {
		t.Errorf("buildKernel twice gave %p and %p", k1, k2)
	}
	if p := d.Stats().Pipelines; p != 1 {
		t.Errorf("%d pipelines, want 1", p)
	}
}

// TestTimestamps checks the device time recorded per kernel.
func TestTimestamps(t *testing.T) {
	probe := devtest.Open(t)
	if !probe.Info().Timestamps {
		t.Skipf("%s has no timestamps on its compute queue", probe.Info().Name)
	}
	probe.Close()
	d := devtest.Open(t, vk.Options{Timestamps: true})
	a, b := alloc(t, d, 256<<10), alloc(t, d, 256<<10)
	const fills, copies = 300, 5 // more than one batch of fills
	for i := range fills {
		fill32(t, d, a, uint32(i))
	}
	for range copies {
		copy32(t, d, a, b)
	}
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{kernel(t, d, "fill32").Name(): fills, kernel(t, d, "copy32").Name(): copies}
	times := d.KernelTimes()
	if len(times) != len(want) {
		t.Errorf("KernelTimes has %d kernels, want %d: %+v", len(times), len(want), times)
	}
	for _, kt := range times {
		if kt.Count != want[kt.Name] {
			t.Errorf("%s: count %d, want %d", kt.Name, kt.Count, want[kt.Name])
		}
		if !(kt.Nanoseconds > 0) {
			t.Errorf("%s: %g ns", kt.Name, kt.Nanoseconds)
		}
		t.Logf("%s: %d runs, %.3f ms", kt.Name, kt.Count, kt.Nanoseconds/1e6)
	}
	checkWords(t, "b", b, fills-1)
}

// TestPipelineCachePersistence checks that Close saves the pipeline cache and
// that Open reads it back.
func TestPipelineCachePersistence(t *testing.T) {
	dir := t.TempDir()
	d := devtest.Open(t, vk.Options{PipelineCacheDir: dir})
	kernel(t, d, "copy32")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "pipelines-*.bin"))
	if err != nil || len(files) != 1 {
		t.Fatalf("cache files %v (%v), want one", files, err)
	}
	fi, err := os.Stat(files[0])
	if err != nil || fi.Size() == 0 {
		t.Fatalf("cache file %s: %v, %d bytes", files[0], err, fi.Size())
	}
	d2 := devtest.Open(t, vk.Options{PipelineCacheDir: dir})
	src, dst := alloc(t, d2, 1024), alloc(t, d2, 1024)
	want := randBytes(9, 1024)
	write(t, src, 0, want)
	copy32(t, d2, src, dst)
	checkBytes(t, "copy with a cached pipeline", read(t, dst, 0, 1024), want)
}

// TestHostWaits checks that the host waits only when it must.
func TestHostWaits(t *testing.T) {
	d := devtest.Open(t)
	a, b := alloc(t, d, 4096), alloc(t, d, 4096)
	kernel(t, d, "fill32")
	kernel(t, d, "copy32")
	s0 := d.Stats()
	fill32(t, d, a, 42)
	copy32(t, d, a, b)
	s1 := d.Stats()
	if s1.Waits != s0.Waits {
		t.Errorf("recording waited %d times", s1.Waits-s0.Waits)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	s2 := d.Stats()
	if s2.Submits != s1.Submits+1 || s2.Waits != s1.Waits {
		t.Errorf("Sync: %d submits, %d waits; want 1 and 0", s2.Submits-s1.Submits, s2.Waits-s1.Waits)
	}
	checkWords(t, "b", b, 42)
	s3 := d.Stats()
	if s3.Waits <= s2.Waits {
		t.Error("Read of a buffer written on the device did not wait")
	}
	checkWords(t, "a", a, 42)
	// Mapped memory is read directly; device memory needs one staging copy,
	// and so one wait, even when the work is done (seen on an NVIDIA H200).
	want := uint64(0)
	if !d.Info().HostMapped {
		want = 1
	}
	if s4 := d.Stats(); s4.Waits-s3.Waits != want {
		t.Errorf("Read of completed work waited %d times, want %d", s4.Waits-s3.Waits, want)
	}
}

// TestFreeInFlight frees buffers the device is still writing: their memory
// must not be handed out until that work is done.
func TestFreeInFlight(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			d := devtest.Open(t, m.opts)
			// Sub-allocated, and big enough for a dedicated block.
			for _, n := range []int64{4 << 20, 48 << 20} {
				for round := range 3 {
					a, err := d.Alloc(n)
					if err != nil {
						t.Fatal(err)
					}
					fill32(t, d, a, 0xDEADBEEF)
					fill32(t, d, a, 0xFEEDFACE)
					if err := a.Free(); err != nil {
						t.Fatal(err)
					}
					b, err := d.Alloc(n)
					if err != nil {
						t.Fatal(err)
					}
					want := randBytes(uint64(round), int(n))
					write(t, b, 0, want)
					checkBytes(t, fmt.Sprintf("%d bytes, round %d", n, round), read(t, b, 0, int(n)), want)
					if err := d.Wait(); err != nil {
						t.Fatal(err)
					}
					checkBytes(t, fmt.Sprintf("%d bytes, round %d, after Wait", n, round), read(t, b, 0, int(n)), want)
					b.Free()
				}
			}
			if err := d.Wait(); err != nil {
				t.Fatal(err)
			}
			if s := d.Stats(); s.LiveBuffers != 0 {
				t.Errorf("%d live buffers", s.LiveBuffers)
			}
		})
	}
}

// BenchmarkCopy copies 64 MiB on the device with copy32.
func BenchmarkCopy(b *testing.B) {
	d := devtest.Open(b)
	const size = 64 << 20
	src, dst := alloc(b, d, size), alloc(b, d, size)
	k := kernel(b, d, "copy32")
	n := size / 4
	grid, pc := groups(d, n), push(uint32(n))
	fill32(b, d, src, 1)
	if err := d.Wait(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	for b.Loop() {
		if err := d.Dispatch(k, grid, pc, src, dst); err != nil {
			b.Fatal(err)
		}
		if err := d.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSlices binds parts of one buffer to kernels: writes through slices are
// seen by host reads of the parent, neighbouring slices are independent
// (no barrier), and misuse is an error.
func TestSlices(t *testing.T) {
	d := devtest.Open(t)
	align := d.Alignment()
	parent := alloc(t, d, 4*align)
	fill32(t, d, parent, 7)
	a, err := parent.Slice(0, align)
	if err != nil {
		t.Fatal(err)
	}
	b, err := parent.Slice(2*align, align)
	if err != nil {
		t.Fatal(err)
	}
	before := d.Stats().Barriers
	fill32(t, d, a, 1) // after the whole-parent fill: one barrier
	fill32(t, d, b, 2) // independent of a: none
	if got := d.Stats().Barriers - before; got != 1 {
		t.Errorf("%d barriers for two fills of disjoint slices after a parent fill, want 1", got)
	}
	raw := read(t, parent, 0, int(4*align))
	for i := int64(0); i < 4*align; i += 4 {
		want := uint32(7)
		switch {
		case i < align:
			want = 1
		case i >= 2*align && i < 3*align:
			want = 2
		}
		if g := binary.LittleEndian.Uint32(raw[i:]); g != want {
			t.Fatalf("parent word at byte %d is %d, want %d", i, g, want)
		}
	}
	if _, err := parent.Slice(align/2, 4); !errors.Is(err, vk.ErrInvalidArgument) {
		t.Errorf("misaligned slice: got %v", err)
	}
	if _, err := parent.Slice(3*align, 2*align); !errors.Is(err, vk.ErrInvalidArgument) {
		t.Errorf("slice past the end: got %v", err)
	}
	if err := a.Free(); err != nil {
		t.Fatal(err)
	}
	if got := read(t, b, 0, 4); binary.LittleEndian.Uint32(got) != 2 {
		t.Errorf("freeing a slice changed its neighbour")
	}
	parent.Free()
	if err := b.Write(0, []byte{1, 2, 3, 4}); !errors.Is(err, vk.ErrInvalidArgument) {
		t.Errorf("write to a slice of a freed buffer: got %v", err)
	}
}

// TestBlock writes a buffer through the buffer spanning its whole block: a
// host read of the buffer waits for that write.
func TestBlock(t *testing.T) {
	d := devtest.Open(t)
	a, src := alloc(t, d, 256), alloc(t, d, 256)
	fill32(t, d, src, 9)
	whole, off, err := a.Block()
	if err != nil {
		t.Fatal(err)
	}
	if whole.Size() < off+a.Size() {
		t.Fatalf("block of %d bytes cannot hold a buffer at offset %d", whole.Size(), off)
	}
	if err := d.Copy(whole, off, src, 0, 256); err != nil {
		t.Fatal(err)
	}
	checkWords(t, "buffer written through its block", a, 9)
	if err := whole.Free(); err != nil {
		t.Fatal(err)
	}
	checkWords(t, "after freeing the block buffer (a no-op)", a, 9)
}

// TestLargeBlockReuse: a large buffer freed and made again every step reuses
// its memory block instead of allocating device memory each time.
func TestLargeBlockReuse(t *testing.T) {
	d := devtest.Open(t)
	const n = 40 << 20 // over half a memory block: a block of its own
	for i := range 5 {
		b := alloc(t, d, n)
		fill32(t, d, b, uint32(i))
		checkWords(t, "large buffer", b, uint32(i))
		if err := b.Free(); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			continue
		}
		if got := d.Stats().Allocations; got > 2 {
			t.Fatalf("step %d: %d device allocations, want the first large block reused", i, got)
		}
	}
}

// TestFaults: injected failures come back as errors that errors.Is can
// match, a lost device stays lost, and Close still releases everything.
func TestFaults(t *testing.T) {
	d := devtest.Open(t)
	d.InjectFaults(vk.Faults{AllocN: 1})
	if _, err := d.Alloc(128 << 20); !errors.Is(err, vk.ErrOutOfDeviceMemory) {
		t.Errorf("injected allocation failure: got %v", err)
	}
	b := alloc(t, d, 64) // the next allocation works
	d.InjectFaults(vk.Faults{SubmitN: 1})
	fill32(t, d, b, 1)
	if err := d.Sync(); !errors.Is(err, vk.ErrDeviceLost) {
		t.Errorf("injected submit failure: got %v", err)
	}
	if _, err := d.Alloc(64); !errors.Is(err, vk.ErrDeviceLost) {
		t.Errorf("after device loss, Alloc: got %v", err)
	}
	if err := b.Read(0, make([]byte, 4)); !errors.Is(err, vk.ErrDeviceLost) {
		t.Errorf("after device loss, Read: got %v", err)
	}

	d2 := devtest.Open(t)
	c := alloc(t, d2, 64)
	d2.InjectFaults(vk.Faults{WaitN: 1})
	fill32(t, d2, c, 2)
	if err := c.Read(0, make([]byte, 4)); !errors.Is(err, vk.ErrDeviceLost) {
		t.Errorf("injected wait failure: got %v", err)
	}
	if err := d2.Close(); err != nil && !errors.Is(err, vk.ErrDeviceLost) {
		t.Errorf("close after loss: %v", err)
	}
}

// TestTexels reads buffers through uniform texel buffer bindings: the data
// arrive intact, whatever the buffer's place in its block; a view is made
// once per byte range and reused; more ranges than one block caches are
// fine; and a writable texel binding is refused.
func TestTexels(t *testing.T) {
	d := devtest.Open(t)
	k := kernel(t, d, "copy_texels")
	copyTexels := func(src, dst *vk.Buffer) {
		t.Helper()
		n := int(src.Size() / 16)
		if err := d.Dispatch(k, groups(d, n), push(uint32(n)), src, dst); err != nil {
			t.Fatal(err)
		}
	}
	var srcs, dsts []*vk.Buffer
	var want [][]byte
	for i := range 300 { // more ranges than a block keeps views for
		size := int64(16 * (1 + i%7))
		src, dst := alloc(t, d, size), alloc(t, d, size)
		data := make([]byte, size)
		for j := range data {
			data[j] = byte(rand.IntN(256))
		}
		if err := src.Write(0, data); err != nil {
			t.Fatal(err)
		}
		srcs, dsts, want = append(srcs, src), append(dsts, dst), append(want, data)
	}
	before := d.Stats().TexelViews
	for round := range 3 {
		for i := range srcs {
			copyTexels(srcs[i], dsts[i])
		}
		if round == 0 {
			if err := d.Wait(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range srcs {
		if got := read(t, dsts[i], 0, len(want[i])); !bytes.Equal(got, want[i]) {
			t.Fatalf("buffer %d read through texels: got %x, want %x", i, got, want[i])
		}
	}
	// The first round makes 300 views; after it completes, the next rounds
	// may replace the idle ones past the cache limit but never all again.
	if made := d.Stats().TexelViews - before; made < len(srcs) || made >= 3*len(srcs) {
		t.Errorf("%d texel views made for %d ranges bound 3 times", made, len(srcs))
	}
	again := d.Stats().TexelViews
	copyTexels(srcs[0], dsts[0])
	copyTexels(srcs[0], dsts[0])
	if got := d.Stats().TexelViews - again; got > 1 {
		t.Errorf("%d views made for one range bound twice", got)
	}
	// New ranges once all work is done: idle views past the limit go.
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		src, dst := alloc(t, d, 32), alloc(t, d, 32)
		data := bytes.Repeat([]byte{byte(i)}, 32)
		if err := src.Write(0, data); err != nil {
			t.Fatal(err)
		}
		copyTexels(src, dst)
		if got := read(t, dst, 0, 32); !bytes.Equal(got, data) {
			t.Fatalf("after eviction: got %x, want %x", got, data)
		}
	}

	src := shaderSource(t, d, "copy_texels")
	src.Bindings = []vk.Access{vk.Read | vk.Write | vk.Texels, vk.Write}
	if _, err := d.Kernel(src); !errors.Is(err, vk.ErrInvalidArgument) {
		t.Errorf("writable texel binding: got %v", err)
	}
}

// shaderSource is op's embedded kernel as a source, to build by hand.
func shaderSource(t testing.TB, d *vk.Device, op string) vk.KernelSource {
	t.Helper()
	k, ok := shaders.Lookup(op, d.Tier())
	if !ok {
		t.Fatalf("no kernel %s", op)
	}
	src := vk.KernelSource{Name: op + ".byhand", SPIRV: k.Code(), PushSize: k.PushSize, Spec: map[uint32]uint32{0: 64}}
	for _, a := range k.Bindings {
		src.Bindings = append(src.Bindings, vk.Access(a))
	}
	return src
}
