// A command arena (arena.c): the host memory of a batch slot's command
// pool, bump-allocated while the slot records and rewound after the pool's
// reset. Every function takes NULL (a slot without one) and does nothing.
#ifndef VKAMP_ARENA_H
#define VKAMP_ARENA_H

#define VK_NO_PROTOTYPES
#define VK_DEFINE_NON_DISPATCHABLE_HANDLE(object) typedef uint64_t object;
#include <stdint.h>
#include <vulkan/vulkan.h>

typedef struct vkamp_arena vkamp_arena;

// vkamp_arena_new returns an empty arena, or NULL when out of memory.
vkamp_arena *vkamp_arena_new(void);
// vkamp_arena_callbacks are the allocator to create and destroy the pool with.
const VkAllocationCallbacks *vkamp_arena_callbacks(vkamp_arena *a);
// vkamp_arena_begin starts a recording: the pool's pieces come from the arena.
void vkamp_arena_begin(vkamp_arena *a);
// vkamp_arena_rewind follows the pool's reset.
void vkamp_arena_rewind(vkamp_arena *a);
// vkamp_arena_destroy follows the pool's destruction.
void vkamp_arena_destroy(vkamp_arena *a);
// vkamp_arena_stats reports pieces given out, rewinds, and whether the
// arena was turned off (a piece outlived a pool reset).
void vkamp_arena_stats(const vkamp_arena *a, uint64_t *pieces, uint64_t *rewinds, int *off);
// vkamp_arena_check exercises an arena without a driver (vk's tests): it
// returns 0, or the number of the first expectation that failed.
int vkamp_arena_check(void);

#endif
