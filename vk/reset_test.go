package vk_test

import (
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/vkamp/vkamp/internal/devtest"
)

// TestSlotReuse submits one batch at a time so that every slot is reused
// many times, reading back only every fourth (the others run ahead: begin
// may stall for a slot and reset it itself, or find it reset by the
// resetter), checks every value read, and that Close ends the resetter.
func TestSlotReuse(t *testing.T) {
	before := runtime.NumGoroutine()
	d := devtest.Open(t)
	a, b := alloc(t, d, 4096), alloc(t, d, 4096)
	got := make([]byte, 4096)
	for i := range 24 {
		fill32(t, d, a, uint32(i))
		copy32(t, d, a, b)
		if err := d.Sync(); err != nil {
			t.Fatal(err)
		}
		if i%4 != 3 {
			continue
		}
		if err := b.Read(0, got); err != nil {
			t.Fatal(err)
		}
		for j := 0; j < len(got); j += 4 {
			if v := binary.LittleEndian.Uint32(got[j:]); v != uint32(i) {
				t.Fatalf("batch %d: word %d is %d", i, j/4, v)
			}
		}
	}
	if s := d.Stats(); s.Submits < 24 {
		t.Errorf("%d submissions, want one per batch (24)", s.Submits)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// The resetter's goroutine is gone once Close returns, but others of
	// the runtime may take a moment.
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}
