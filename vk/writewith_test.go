package vk_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// TestWriteWith: what fill writes lands in the buffer, after the recorded
// work that uses it, on each path: mapped and idle, mapped and in use (a
// staging chunk), staged, and larger than the staging ring.
func TestWriteWith(t *testing.T) {
	const words = 1 << 18 // 1 MiB: one chunk of the default ring, more than stagingOpts'
	for _, c := range []struct {
		name string
		opts vk.Options
		busy bool
	}{
		{"mapped", vk.Options{}, false},
		{"mapped-busy", vk.Options{}, true},
		{"staged", vk.Options{ForceStaging: true}, true},
		{"staged-over-ring", vk.Options{ForceStaging: true, StagingSize: 1 << 19}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := devtest.Open(t, c.opts)
			n := int64(4 * words)
			src, dst := alloc(t, d, n), alloc(t, d, n)
			if err := src.Write(0, bytes.Repeat([]byte{0xAB}, int(n))); err != nil {
				t.Fatal(err)
			}
			if err := d.Wait(); err != nil {
				t.Fatal(err)
			}
			if c.busy {
				// Recorded, not waited for: the write must land after it.
				if err := d.Dispatch(kernel(t, d, "copy32"), groups(d, words), push(words), src, dst); err != nil {
					t.Fatal(err)
				}
			}
			want := make([]byte, n-8)
			for i := range want {
				want[i] = byte(i*7 + i>>11)
			}
			calls := 0
			err := dst.WriteWith(8, n-8, func(b []byte) {
				calls++
				if len(b) != len(want) {
					panic(fmt.Sprintf("fill got %d bytes, want %d", len(b), len(want)))
				}
				copy(b, want)
			})
			if err != nil {
				t.Fatal(err)
			}
			if calls != 1 {
				t.Errorf("fill called %d times, want 1", calls)
			}
			got := make([]byte, n)
			if err := dst.Read(0, got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[8:], want) {
				t.Errorf("bytes written by fill differ from what was read back")
			}
			if c.busy && !bytes.Equal(got[:8], bytes.Repeat([]byte{0xAB}, 8)) {
				t.Errorf("the first 8 bytes %x, want the earlier copy's abab...", got[:8])
			}
			if err := dst.WriteWith(0, n+1, func([]byte) { t.Error("fill called for a range outside the buffer") }); err == nil {
				t.Error("WriteWith past the end: no error")
			}
		})
	}
}
