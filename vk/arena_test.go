//go:build cgo

package vk_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// TestArenaCheck runs the command arena's own check: pieces from malloc
// outside a recording, bump-allocated and aligned within one, kept bytes on
// reallocation, and a piece live at a rewind turning the arena off intact.
func TestArenaCheck(t *testing.T) {
	if n := vk.ArenaCheck(); n != 0 {
		t.Fatalf("command arena check %d failed (vkamp_arena_check in arena.c)", n)
	}
}

// TestArenaRewinds records batches of dispatches and fills through the
// slots' command arenas and checks the results and that no arena was turned
// off, which would mean the driver kept a piece of a recording past its
// pool's reset. On lavapipe, which copies every recorded command into
// memory of the pool's, the arenas must have given pieces out and rewound.
func TestArenaRewinds(t *testing.T) {
	d := devtest.Open(t)
	bufs := []*vk.Buffer{alloc(t, d, 4096), alloc(t, d, 4096), alloc(t, d, 4096)}
	k := kernel(t, d, "copy32")
	for round := uint32(1); round <= 20; round++ {
		fill32(t, d, bufs[0], round)
		for i := range 40 {
			src, dst := bufs[i%2], bufs[(i+1)%2]
			if err := d.Dispatch(k, groups(d, 1024), push(1024), src, dst); err != nil {
				t.Fatal(err)
			}
		}
		copy32(t, d, bufs[0], bufs[2])
		checkWords(t, "the chain's last copy", bufs[2], round)
	}
	if err := d.Wait(); err != nil {
		t.Fatal(err)
	}
	pieces, rewinds, off := vk.ArenaStats(d)
	t.Logf("%s: %d pieces, %d rewinds, %d arenas off", d.Info().DriverName, pieces, rewinds, off)
	if off != 0 {
		t.Errorf("%d slots turned their command arena off: the driver kept memory of a recording past its pool's reset", off)
	}
	// Mesa 22.3's lavapipe takes its recordings' memory from the pool's
	// allocator, which the arena serves; Mesa 26's records without it (0
	// pieces), so there the arena only rewinds.
	if d.Info().DriverName == "llvmpipe" && mesaMajor(d.Info().DriverInfo) < 26 && (pieces == 0 || rewinds == 0) {
		t.Errorf("lavapipe: %d pieces from the command arenas and %d rewinds, want both above 0", pieces, rewinds)
	}
}

// mesaMajor is the major version in a Mesa driver's info ("Mesa 22.3.6"),
// 0 if none.
func mesaMajor(info string) int {
	var major int
	if i := strings.Index(info, "Mesa "); i >= 0 {
		fmt.Sscanf(info[i+len("Mesa "):], "%d", &major)
	}
	return major
}
