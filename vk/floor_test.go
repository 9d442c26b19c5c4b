package vk_test

import (
	"errors"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// TestRecordingFloor records launches outside the device's batches, refuses
// bad arguments, and leaves the device usable: a copy after it gives the data.
func TestRecordingFloor(t *testing.T) {
	for _, sets := range []bool{false, true} {
		d := devtest.Open(t, vk.Options{DescriptorSets: sets})
		a, b := alloc(t, d, 4096), alloc(t, d, 4096)
		k := kernel(t, d, "copy32")
		per, err := d.RecordingFloor(k, 300, 3, groups(d, 1024), push(1024), a, b)
		if err != nil || per <= 0 {
			t.Fatalf("descriptor sets %v: %v per launch, %v", sets, per, err)
		}
		t.Logf("descriptor sets %v: %v per launch", sets, per)
		// A step's sequence: copy32 and copy16 (the same bindings and push
		// constants) in turn, each bound, a barrier before each.
		sw, err := d.RecordingFloorSwitching(k, kernel(t, d, "copy16"), 300, 3, groups(d, 1024), push(1024), a, b)
		if err != nil || sw <= 0 {
			t.Fatalf("descriptor sets %v: switching: %v per launch, %v", sets, sw, err)
		}
		t.Logf("descriptor sets %v: switching kernels: %v per launch", sets, sw)
		if _, err := d.RecordingFloorSwitching(k, kernel(t, d, "fill32"), 10, 1, groups(d, 1024), push(1024), a, b); !errors.Is(err, vk.ErrInvalidArgument) {
			t.Errorf("switching to a kernel of other bindings: %v, want ErrInvalidArgument", err)
		}
		if _, err := d.RecordingFloorSwitching(k, nil, 10, 1, groups(d, 1024), push(1024), a, b); !errors.Is(err, vk.ErrInvalidArgument) {
			t.Errorf("switching to a nil kernel: %v, want ErrInvalidArgument", err)
		}
		for _, nr := range [][2]int{{0, 1}, {10, 0}, {-1, 1}} {
			if _, err := d.RecordingFloor(k, nr[0], nr[1], groups(d, 1024), push(1024), a, b); !errors.Is(err, vk.ErrInvalidArgument) {
				t.Errorf("count %d, rounds %d: %v, want ErrInvalidArgument", nr[0], nr[1], err)
			}
		}
		if _, err := d.RecordingFloor(k, 10, 1, groups(d, 1024), push(1024), a); !errors.Is(err, vk.ErrInvalidArgument) {
			t.Errorf("one buffer for two bindings: %v, want ErrInvalidArgument", err)
		}
		if _, err := d.RecordingFloor(kernel(t, d, "copy_texels"), 10, 1, groups(d, 1024), push(1024), a, b); !errors.Is(err, vk.ErrInvalidArgument) {
			t.Errorf("texel binding: %v, want ErrInvalidArgument", err)
		}
		if s := d.Stats(); s.Dispatches != 0 || s.Submits != 0 {
			t.Errorf("descriptor sets %v: stats %+v after the floor alone, want no dispatch or submit", sets, s)
		}
		want := randBytes(3, 4096)
		write(t, a, 0, want)
		copy32(t, d, a, b)
		checkBytes(t, "copy after the floor", read(t, b, 0, 4096), want)
	}
}
