package vk_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// TestAllocIn checks that a buffer allocated into a caller's struct holds
// data, is counted and freed as an allocated one is, and that a buffer in
// use cannot be allocated into again.
func TestAllocIn(t *testing.T) {
	d := devtest.Open(t)
	var owner struct {
		tag int
		mem vk.Buffer
	}
	before := d.Stats().LiveBuffers
	if err := d.AllocIn(&owner.mem, 12); err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().LiveBuffers; got != before+1 {
		t.Errorf("live buffers %d after AllocIn, want %d", got, before+1)
	}
	if owner.mem.Size() != 12 {
		t.Errorf("size %d, want 12", owner.mem.Size())
	}
	want := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	if err := owner.mem.Write(0, want); err != nil {
		t.Fatal(err)
	}
	other, err := d.Alloc(12)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Free()
	if err := d.Copy(other, 0, &owner.mem, 0, 12); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 12)
	if err := other.Read(0, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
	if err := d.AllocIn(&owner.mem, 4); !errors.Is(err, vk.ErrInvalidArgument) {
		t.Errorf("AllocIn into a buffer in use: %v, want ErrInvalidArgument", err)
	}
	if err := d.AllocIn(nil, 4); !errors.Is(err, vk.ErrInvalidArgument) {
		t.Errorf("AllocIn into nil: %v, want ErrInvalidArgument", err)
	}
	var zero vk.Buffer
	if err := d.AllocIn(&zero, 0); !errors.Is(err, vk.ErrInvalidArgument) || zero.Size() != 0 {
		t.Errorf("AllocIn of 0 bytes: %v, size %d; want ErrInvalidArgument and a zero buffer", err, zero.Size())
	}
	if err := owner.mem.Free(); err != nil {
		t.Fatal(err)
	}
	if got := d.Stats().LiveBuffers; got != before+1 { // other is still live
		t.Errorf("live buffers %d after Free, want %d", got, before+1)
	}
}
