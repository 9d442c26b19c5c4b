package vk_test

import (
	"testing"
	"time"

	"github.com/vkamp/vkamp/internal/devtest"
)

// TestFlushReached: a goroutine that polls Reached sees the work of a
// Flush finish while another goroutine keeps recording, and a read of what
// that work wrote then waits no more.
func TestFlushReached(t *testing.T) {
	d := devtest.Open(t)
	a, b := alloc(t, d, 1<<16), alloc(t, d, 1<<16)
	fill32(t, d, a, 7)
	mark, err := d.Flush()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		for {
			ok, err := d.Reached(mark)
			if err != nil || ok {
				done <- err
				return
			}
			time.Sleep(50 * time.Microsecond)
		}
	}()
	for range 10 { // recorded meanwhile, and not flushed
		fill32(t, d, b, 1)
		copy32(t, d, a, b)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waits := d.Stats().Waits
	if got := read(t, a, 0, 4); got[0] != 7 {
		t.Errorf("read %v, want 7", got)
	}
	if w := d.Stats().Waits - waits; w != 0 {
		t.Errorf("the read after Reached waited %d times", w)
	}
	// Nothing recorded since the device finished: the mark is reached.
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	mark, err = d.Flush()
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Reached(mark); !ok || err != nil {
		t.Errorf("Reached of a mark of finished work = %v, %v", ok, err)
	}
}
