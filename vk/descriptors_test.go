package vk_test

import (
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// TestDescriptorPaths runs the same chain of launches with push descriptors
// (where the device has them) and with a descriptor set per dispatch: storage
// and texel bindings, the same kernel back to back (its pipeline bound once)
// and alternating kernels, across batch boundaries. Both give the data.
func TestDescriptorPaths(t *testing.T) {
	for _, sets := range []bool{false, true} {
		d := devtest.Open(t, vk.Options{DescriptorSets: sets, BatchSize: 5})
		if sets && d.Info().PushDescriptors {
			t.Fatal("Options.DescriptorSets: Info still reports push descriptors")
		}
		t.Logf("descriptor sets %v: push descriptors %v", sets, d.Info().PushDescriptors)
		const size = 4096
		bufs := []*vk.Buffer{alloc(t, d, size), alloc(t, d, size), alloc(t, d, size), alloc(t, d, size)}
		want := randBytes(11, size)
		write(t, bufs[0], 0, want)
		tex := kernel(t, d, "copy_texels")
		for i := range 12 {
			src, dst := bufs[i%4], bufs[(i+1)%4]
			switch {
			case i%3 == 2:
				n := int(src.Size() / 16)
				if err := d.Dispatch(tex, groups(d, n), push(uint32(n)), src, dst); err != nil {
					t.Fatal(err)
				}
			default: // twice in a row: the second launch keeps the bound pipeline
				copy32(t, d, src, dst)
			}
		}
		before := d.Stats()
		checkBytes(t, "after 12 launches", read(t, bufs[0], 0, size), want)
		fill32(t, d, bufs[1], 7)
		fill32(t, d, bufs[2], 9)
		copy32(t, d, bufs[0], bufs[3])
		got := d.Stats()
		if n := got.DescriptorSets - before.DescriptorSets; n != 3 {
			t.Errorf("descriptor sets %v: %d written or pushed for 3 dispatches", sets, n)
		}
		checkBytes(t, "copy after fills", read(t, bufs[3], 0, size), want)
		if w := read(t, bufs[2], 0, 4); w[0] != 9 || w[1] != 0 {
			t.Errorf("descriptor sets %v: filled word reads % x, want 09 00 00 00", sets, w)
		}
	}
}
