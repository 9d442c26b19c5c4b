// A small C layer over the Vulkan API for package vk: it loads libvulkan,
// builds the pNext chains that the vulkan-go 1.1.88 headers lack, and records
// a whole dispatch in one cgo call. Non-dispatchable handles are uint64_t so
// that Go never holds a fake pointer.
#ifndef VKAMP_SHIM_H
#define VKAMP_SHIM_H

#define VK_NO_PROTOTYPES
#define VK_DEFINE_NON_DISPATCHABLE_HANDLE(object) typedef uint64_t object;
#include <stdint.h>
#include <vulkan/vulkan.h>
#include "arena.h"

// vkamp_load opens the Vulkan loader. It returns NULL on success or a static
// message saying what failed.
const char *vkamp_load(void);
void *vkamp_get_instance_proc_addr(void);

VkResult vkamp_create_instance(int validation, int sync_validation, VkInstance *out);
void vkamp_destroy_instance(VkInstance inst);
// vkamp_instance_api is the API version the instance asked for: 1.3 where
// the loader has it, else 1.1.
uint32_t vkamp_instance_api(void);

#define VKAMP_MAX_COOP_SHAPES 16
#define VKAMP_MAX_SPEC 32 // specialization constants per pipeline
#define VKAMP_CM2_WORKGROUP_SCOPE 1
#define VKAMP_CM2_FLEXIBLE_DIMENSIONS 2
#define VKAMP_CM2_REDUCTIONS 4
#define VKAMP_CM2_CONVERSIONS 8
#define VKAMP_CM2_PER_ELEMENT 16
#define VKAMP_CM2_TENSOR_ADDRESSING 32
#define VKAMP_CM2_BLOCK_LOADS 64

// Capabilities read through vkGetPhysicalDeviceFeatures2/Properties2.
typedef struct {
	uint32_t api_version;
	uint32_t has_16bit_storage_ext, has_float16_int8_ext, has_float_controls_ext;
	uint32_t has_driver_props_ext, has_coopmat_ext, has_subgroup_size_control_ext;
	uint32_t storage_buffer_16bit, shader_float16, shader_int16, shader_int64;
	uint32_t subgroup_size, subgroup_stages, subgroup_ops;
	uint32_t rte16, rte32, denorm_preserve16;
	uint64_t max_memory_allocation_size;
	uint8_t device_uuid[16];
	uint32_t driver_id;
	char driver_name[256];
	char driver_info[256];
	// The subgroup-scope shapes (M, N, K) with fp32 accumulators and
	// results: fp16 x fp16, and bf16 x bf16 (VK_KHR_shader_bfloat16).
	uint32_t coopmat_f16_n, coopmat_f16[VKAMP_MAX_COOP_SHAPES][3];
	uint32_t coopmat_bf16_n, coopmat_bf16[VKAMP_MAX_COOP_SHAPES][3];
	uint32_t has_bf16_ext, bf16_type, bf16_coopmat; // VK_KHR_shader_bfloat16 and two of its features
	// VK_NV_cooperative_matrix2: its features (VKAMP_CM2_* bits), limits, and
	// the fp16 and bf16 flexible dimensions' granularities (M, N, K, scope,
	// workgroup invocations, bf16).
	uint32_t has_cm2_ext, cm2_features, cm2_max_dimension, cm2_workgroup_max, cm2_reserved_shared;
	uint32_t cm2_flex_n, cm2_flex[VKAMP_MAX_COOP_SHAPES][6];
	uint32_t has_maint4_ext, maintenance4; // VK_KHR_maintenance4 (LocalSizeId in SPIR-V 1.6)
	// What cooperative-matrix shaders also need: the cooperativeMatrix
	// feature, and the Vulkan memory model (VK_KHR_vulkan_memory_model).
	uint32_t coopmat_feature, has_vmm_ext, vmm, vmm_device_scope;
	uint32_t has_memory_budget_ext; // VK_EXT_memory_budget
	uint32_t has_push_descriptor_ext; // VK_KHR_push_descriptor; vkamp_create_device enables it when set
} vkamp_caps;

void vkamp_query_caps(VkInstance inst, VkPhysicalDevice pd, vkamp_caps *caps);

// enable_coopmat enables VK_KHR_cooperative_matrix and the Vulkan memory
// model; only pass it when caps says the device has both.
// enable_bf16_coopmat, with it, enables VK_KHR_shader_bfloat16's bf16 type
// and bf16 cooperative matrices, and enable_cm2 (VKAMP_CM2_* bits)
// VK_NV_cooperative_matrix2 with those features.
VkResult vkamp_create_device(VkPhysicalDevice pd, uint32_t family, const vkamp_caps *caps,
	int enable16, int enable_f16, int enable_coopmat, int enable_bf16_coopmat, uint32_t enable_cm2,
	VkDevice *dev, VkQueue *queue);
void vkamp_destroy_device(VkDevice dev);
VkResult vkamp_device_wait_idle(VkDevice dev);

// Memory blocks: one VkDeviceMemory with one VkBuffer over all of it.
// heap_room holds, per heap, the most bytes the block may take: a block whose
// memory would take more from its heap is refused before vkAllocateMemory
// (*refused is set, and VK_ERROR_OUT_OF_DEVICE_MEMORY returned). *heap and
// *alloc_size say which heap the memory comes from and how many bytes the
// driver asks for, also on failure once they are known.
VkResult vkamp_create_block(VkDevice dev, VkPhysicalDevice pd, uint64_t size, uint32_t type_bits_wanted,
	uint32_t required_flags, uint32_t preferred_flags, const uint64_t *heap_room, VkBuffer *buf,
	VkDeviceMemory *mem, void **mapped, uint32_t *type_index, uint32_t *heap, uint64_t *alloc_size, int *refused);
// vkamp_heap_budget reads VK_EXT_memory_budget's heapBudget and heapUsage of
// each of the n heaps, and returns 1; only call it when caps says the device
// has the extension.
int vkamp_heap_budget(VkPhysicalDevice pd, uint32_t n, uint64_t *budget, uint64_t *usage);
void vkamp_destroy_block(VkDevice dev, VkBuffer buf, VkDeviceMemory mem);
// A view of range bytes of a block at offset as R32G32B32A32_UINT texels,
// for uniform-texel-buffer bindings.
VkResult vkamp_create_view(VkDevice dev, VkBuffer buf, uint64_t offset, uint64_t range, VkBufferView *out);
void vkamp_destroy_view(VkDevice dev, VkBufferView v);

VkResult vkamp_create_pipeline_cache(VkDevice dev, const void *data, size_t size, VkPipelineCache *out);
VkResult vkamp_get_pipeline_cache_data(VkDevice dev, VkPipelineCache c, size_t *size, void *data);
void vkamp_destroy_pipeline_cache(VkDevice dev, VkPipelineCache c);

// push_desc makes the set layout a push-descriptor one (see vkamp_slot).
VkResult vkamp_create_kernel(VkDevice dev, VkPipelineCache cache, const uint32_t *code, size_t code_size,
	uint32_t nbind, const uint32_t *texel, uint32_t push_size, const uint32_t *spec, uint32_t nspec,
	int push_desc, VkDescriptorSetLayout *set_layout, VkPipelineLayout *layout, VkPipeline *pipeline);
void vkamp_destroy_kernel(VkDevice dev, VkDescriptorSetLayout set_layout, VkPipelineLayout layout, VkPipeline pipeline);

// A batch slot: command pool and buffer, fence, descriptor pool (none with
// push descriptors), query pool.
typedef struct {
	VkCommandPool cmd_pool;
	VkCommandBuffer cmd;
	VkFence fence;
	VkDescriptorPool desc_pool;
	VkQueryPool query_pool;
	// push_desc: the device's kernels take their buffers as push
	// descriptors (VK_KHR_push_descriptor), so that a dispatch allocates no
	// descriptor set and the slot has no descriptor pool.
	uint32_t push_desc;
	VkPipeline bound; // the pipeline last bound in cmd, to skip rebinding it
	vkamp_arena *arena; // the command pool's host memory (arena.h); NULL for a secondary
} vkamp_slot;

VkResult vkamp_create_slot(VkDevice dev, uint32_t family, uint32_t max_sets, uint32_t max_descriptors,
	uint32_t queries, int push_desc, vkamp_slot *s);
void vkamp_destroy_slot(VkDevice dev, vkamp_slot *s);
// vkamp_reset_slot resets the slot's command and descriptor pools for the
// next vkamp_begin. The pools are the slot's alone (a pool per slot), so it
// may run on another thread while other slots record or wait.
VkResult vkamp_reset_slot(VkDevice dev, vkamp_slot *s);
// vkamp_begin resets the fence and begins the command buffer of a slot
// whose pools vkamp_reset_slot has reset (or that is new).
VkResult vkamp_begin(VkDevice dev, vkamp_slot *s, uint32_t queries);
VkResult vkamp_submit(VkQueue q, vkamp_slot *s);
VkResult vkamp_wait(VkDevice dev, vkamp_slot *s, uint64_t timeout_ns);
VkResult vkamp_fence_status(VkDevice dev, vkamp_slot *s);
VkResult vkamp_query_results(VkDevice dev, vkamp_slot *s, uint32_t n, uint64_t *out);

// What one dispatch binds and pushes. The device keeps one and fills it in
// place, so that recording a launch allocates nothing.
#define VKAMP_MAX_BINDINGS 16
#define VKAMP_MAX_PUSH 256
typedef struct {
	uint64_t bufs[VKAMP_MAX_BINDINGS], offs[VKAMP_MAX_BINDINGS], ranges[VKAMP_MAX_BINDINGS];
	uint64_t views[VKAMP_MAX_BINDINGS]; // a texel view, or 0 for a storage buffer
	uint8_t push[VKAMP_MAX_PUSH];
} vkamp_dispatch_args;

// One dispatch: push the buffers as descriptors (or allocate and write a
// descriptor set), bind the pipeline unless it is bound already, push the
// constants, dispatch, with timestamps around it when ts >= 0; first, when
// barrier is set, what vkamp_cmd_barrier records (one cgo call, not two).
VkResult vkamp_cmd_dispatch(VkDevice dev, vkamp_slot *s, VkPipeline pipeline, VkPipelineLayout layout,
	VkDescriptorSetLayout set_layout, uint32_t nbind, const vkamp_dispatch_args *a, uint32_t push_size,
	uint32_t gx, uint32_t gy, uint32_t gz, int32_t ts, int barrier);
// vkamp_record_dispatches records n times what vkamp_cmd_dispatch records
// (no timestamps), in one call: the driver's floor of a launch's host cost.
// Launch i uses pipeline i mod nk (and its layouts), bound only when it
// changes; barrier puts a barrier before every launch.
VkResult vkamp_record_dispatches(VkDevice dev, vkamp_slot *s, const VkPipeline *pipelines,
	const VkPipelineLayout *layouts, const VkDescriptorSetLayout *set_layouts, uint32_t nk, uint32_t nbind,
	const vkamp_dispatch_args *a, uint32_t push_size, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t n, int barrier);
void vkamp_cmd_barrier(vkamp_slot *s);
void vkamp_cmd_host_barrier(vkamp_slot *s);
void vkamp_cmd_copy(vkamp_slot *s, VkBuffer src, uint64_t src_off, VkBuffer dst, uint64_t dst_off, uint64_t size);
void vkamp_cmd_fill(vkamp_slot *s, VkBuffer dst, uint64_t off, uint64_t size, uint32_t value);

// A secondary command buffer (no fence, no queries), begun for recording
// with simultaneous use: capture.go's graphs.
VkResult vkamp_create_secondary(VkDevice dev, uint32_t family, uint32_t max_sets, uint32_t max_descriptors,
	int push_desc, vkamp_slot *s);
VkResult vkamp_end_secondary(vkamp_slot *s);
void vkamp_cmd_execute(vkamp_slot *s, uint32_t n, const VkCommandBuffer *cmds);
// vkamp_cmd_replay records a graph's replay: a barrier, the secondary
// command buffers, a barrier (one cgo call, not three).
void vkamp_cmd_replay(vkamp_slot *s, uint32_t n, const VkCommandBuffer *cmds);

#endif
