//go:build cgo

#include "arena.h"
#include <stdlib.h>
#include <string.h>

// A command arena: the host memory a primary slot's command pool asks for
// while the slot records (lavapipe copies each recorded command into some
// 15 pieces of it per dispatch) is bump-allocated from one buffer; the
// driver's frees at the pool's reset only count pieces down, and
// vkamp_reset_slot then rewinds the buffer. malloc and free, the frees on
// the resetter's thread, had cost more than the recording itself (vk's
// BenchmarkDispatchHost on lavapipe: 4.0-4.4 us per dispatch with them,
// 1.2-1.4 with the arena, alternated). It rewinds only when every piece it
// gave out has been freed: anything the driver kept past the reset would be
// overwritten, so then the slot goes back to malloc for good (arena->off).
// A slot is used by one thread at a time (recording, or its reset), so the
// arena takes no lock.
struct vkamp_arena {
	char *buf;
	size_t cap, used;
	size_t want;    // bytes the recording asked for, arena and overflow: the next size
	uint64_t live;  // pieces from buf not yet freed
	int recording;  // between vkamp_arena_begin and the next rewind: pieces come from buf
	int off;        // something outlived a reset: malloc only
	uint64_t pieces, rewinds; // pieces given out from buf, rewinds: for tests
	VkAllocationCallbacks cb; // here, not in Go memory: the driver may keep the pointer
};

// Each piece is preceded by its size, whether it is the arena's, and its
// distance from the start of a malloc'd block.
typedef struct {
	uint64_t size;
	uint32_t arena;
	uint32_t back;
} piece_hdr;

static size_t align_up(size_t x, size_t a) { return (x + a - 1) & ~(a - 1); }

static void *VKAPI_PTR arena_alloc(void *user, size_t size, size_t align, VkSystemAllocationScope scope) {
	(void)scope;
	vkamp_arena *a = user;
	if (align < sizeof(piece_hdr)) align = sizeof(piece_hdr);
	if (a->recording && !a->off) {
		size_t at = align_up(a->used + sizeof(piece_hdr), align);
		a->want = align_up(a->want + sizeof(piece_hdr), align) + size;
		if (at + size <= a->cap) {
			piece_hdr *h = (piece_hdr *)(a->buf + at) - 1;
			h->size = size;
			h->arena = 1;
			h->back = 0;
			a->used = at + size;
			a->live++;
			a->pieces++;
			return a->buf + at;
		}
	}
	char *raw = malloc(size + align + sizeof(piece_hdr));
	if (!raw) return NULL;
	char *p = (char *)align_up((size_t)raw + sizeof(piece_hdr), align);
	piece_hdr *h = (piece_hdr *)p - 1;
	h->size = size;
	h->arena = 0;
	h->back = (uint32_t)(p - raw);
	return p;
}

static void VKAPI_PTR arena_free(void *user, void *mem) {
	vkamp_arena *a = user;
	if (!mem) return;
	piece_hdr *h = (piece_hdr *)mem - 1;
	if (h->arena) a->live--;
	else free((char *)mem - h->back);
}

static void *VKAPI_PTR arena_realloc(void *user, void *orig, size_t size, size_t align, VkSystemAllocationScope scope) {
	if (!orig) return arena_alloc(user, size, align, scope);
	if (size == 0) {
		arena_free(user, orig);
		return NULL;
	}
	void *p = arena_alloc(user, size, align, scope);
	if (!p) return NULL;
	size_t old = ((piece_hdr *)orig - 1)->size;
	memcpy(p, orig, old < size ? old : size);
	arena_free(user, orig);
	return p;
}

// vkamp_arena_rewind empties the arena after its pool's reset, growing it to what
// the last recording wanted, or turns it off if a piece is still live.
void vkamp_arena_rewind(vkamp_arena *a) {
	if (!a) return;
	a->recording = 0;
	if (a->off) return;
	if (a->live != 0) {
		a->off = 1;
		return;
	}
	a->used = 0;
	a->rewinds++;
	if (a->want > a->cap) {
		size_t cap = 2 * a->want;
		char *b = malloc(cap);
		if (b) {
			free(a->buf);
			a->buf = b;
			a->cap = cap;
		}
	}
	a->want = 0;
}

vkamp_arena *vkamp_arena_new(void) {
	vkamp_arena *a = calloc(1, sizeof *a);
	if (!a) return NULL;
	a->cb.pUserData = a;
	a->cb.pfnAllocation = arena_alloc;
	a->cb.pfnReallocation = arena_realloc;
	a->cb.pfnFree = arena_free;
	return a;
}

const VkAllocationCallbacks *vkamp_arena_callbacks(vkamp_arena *a) { return a ? &a->cb : NULL; }

void vkamp_arena_begin(vkamp_arena *a) {
	if (a) a->recording = 1;
}

void vkamp_arena_destroy(vkamp_arena *a) {
	if (!a) return;
	free(a->buf);
	free(a);
}

void vkamp_arena_stats(const vkamp_arena *a, uint64_t *pieces, uint64_t *rewinds, int *off) {
	*pieces = a ? a->pieces : 0;
	*rewinds = a ? a->rewinds : 0;
	*off = a ? a->off : 0;
}

// vkamp_arena_check exercises a command arena without a driver (vk's
// tests): it returns 0, or the number of the first expectation that failed.
int vkamp_arena_check(void) {
	const VkSystemAllocationScope obj = VK_SYSTEM_ALLOCATION_SCOPE_OBJECT;
	vkamp_arena a = {0};
	int fail = 0;
	// Outside a recording pieces come from malloc.
	char *before = arena_alloc(&a, 100, 8, obj);
	if (!before || ((piece_hdr *)before - 1)->arena) return 1;
	// The first recording overflows the empty arena; its rewind sizes it.
	a.recording = 1;
	char *p = arena_alloc(&a, 40, 64, obj);
	if (!p || ((size_t)p & 63) != 0) return 2;
	arena_free(&a, p);
	vkamp_arena_rewind(&a);
	if (a.off || a.cap < 40 || a.recording) return 3;
	// The next one bump-allocates, aligned; a reallocation keeps the bytes.
	a.recording = 1;
	char *q = arena_alloc(&a, 24, 8, obj);
	if (!q || !((piece_hdr *)q - 1)->arena || ((size_t)q & 15) != 0) return 4;
	memset(q, 7, 24);
	char *r = arena_realloc(&a, q, 4096, 256, obj); // past the arena: from malloc
	if (!r || ((size_t)r & 255) != 0 || r[0] != 7 || r[23] != 7) return 5;
	arena_free(&a, r);
	vkamp_arena_rewind(&a);
	if (a.off || a.rewinds != 2 || a.cap < 4096) return 6;
	// A piece still live at the rewind turns the arena off and stays intact.
	a.recording = 1;
	char *kept = arena_alloc(&a, 32, 8, obj);
	if (!kept || !((piece_hdr *)kept - 1)->arena) return 7;
	memset(kept, 9, 32);
	vkamp_arena_rewind(&a);
	a.recording = 1;
	char *after = arena_alloc(&a, 32, 8, obj);
	if (!a.off || !after || ((piece_hdr *)after - 1)->arena) fail = 8;
	else if (kept[0] != 9 || kept[31] != 9) fail = 9;
	arena_free(&a, after);
	arena_free(&a, kept);
	arena_free(&a, before);
	free(a.buf);
	return fail;
}
