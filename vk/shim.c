//go:build cgo

#include "shim.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// VK_KHR_cooperative_matrix came after the Debian 12 headers (1.3.239).
#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VKAMP_STYPE_COOPMAT_PROPS ((VkStructureType)1000506001)
#define VKAMP_STYPE_COOPMAT_FEATURES ((VkStructureType)1000506000)
typedef struct {
	VkStructureType sType;
	void *pNext;
	VkBool32 cooperativeMatrix;
	VkBool32 cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
typedef struct {
	VkStructureType sType;
	void *pNext;
	uint32_t MSize, NSize, KSize;
	uint32_t AType, BType, CType, ResultType; // VkComponentTypeKHR
	VkBool32 saturatingAccumulation;
	uint32_t scope; // VkScopeKHR
} VkCooperativeMatrixPropertiesKHR;
typedef VkResult (VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
	VkPhysicalDevice, uint32_t *, VkCooperativeMatrixPropertiesKHR *);
#else
#define VKAMP_STYPE_COOPMAT_PROPS VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR
#define VKAMP_STYPE_COOPMAT_FEATURES VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR
#endif
#define VKAMP_COMPONENT_F16 0
#define VKAMP_COMPONENT_F32 1
#define VKAMP_COMPONENT_BF16 1000141000 // VK_COMPONENT_TYPE_BFLOAT16_KHR
#define VKAMP_SCOPE_SUBGROUP 3

// VK_KHR_shader_bfloat16 came after every header vkamp builds with.
#define VKAMP_STYPE_BF16_FEATURES ((VkStructureType)1000141000)
typedef struct {
	VkStructureType sType;
	void *pNext;
	VkBool32 shaderBFloat16Type;
	VkBool32 shaderBFloat16DotProduct;
	VkBool32 shaderBFloat16CooperativeMatrix;
} vkamp_bf16_features;

// VK_NV_cooperative_matrix2 (extension 594) came after Debian 12's headers too.
#define VKAMP_STYPE_CM2_FEATURES ((VkStructureType)1000593000)
#define VKAMP_STYPE_CM2_PROPS ((VkStructureType)1000593002)
#define VKAMP_STYPE_CM2_FLEX ((VkStructureType)1000593001)
typedef struct {
	VkStructureType sType;
	void *pNext;
	VkBool32 workgroupScope, flexibleDimensions, reductions, conversions, perElementOperations,
		tensorAddressing, blockLoads;
} vkamp_cm2_features;
typedef struct {
	VkStructureType sType;
	void *pNext;
	uint32_t workgroupScopeMaxWorkgroupSize, flexibleDimensionsMaxDimension, workgroupScopeReservedSharedMemory;
} vkamp_cm2_props;
typedef struct {
	VkStructureType sType;
	void *pNext;
	uint32_t MGranularity, NGranularity, KGranularity;
	uint32_t AType, BType, CType, ResultType; // VkComponentTypeKHR
	VkBool32 saturatingAccumulation;
	uint32_t scope; // VkScopeKHR
	uint32_t workgroupInvocations;
} vkamp_cm2_flex;
typedef VkResult (VKAPI_PTR *vkamp_cm2_flex_fn)(VkPhysicalDevice, uint32_t *, vkamp_cm2_flex *);

extern void vkampDebugMessage(int severity, char *msg);

static void *lib;
static PFN_vkGetInstanceProcAddr gipa;

#define FUNCS(X) \
	X(vkDestroyInstance) X(vkEnumerateDeviceExtensionProperties) X(vkGetPhysicalDeviceFeatures2) \
	X(vkGetPhysicalDeviceProperties2) X(vkGetPhysicalDeviceMemoryProperties) X(vkCreateDevice) \
	X(vkDestroyDevice) X(vkGetDeviceQueue) X(vkDeviceWaitIdle) X(vkCreateBuffer) X(vkDestroyBuffer) \
	X(vkGetBufferMemoryRequirements) X(vkAllocateMemory) X(vkFreeMemory) X(vkBindBufferMemory) \
	X(vkMapMemory) X(vkCreatePipelineCache) X(vkGetPipelineCacheData) X(vkDestroyPipelineCache) \
	X(vkCreateShaderModule) X(vkDestroyShaderModule) X(vkCreateDescriptorSetLayout) \
	X(vkDestroyDescriptorSetLayout) X(vkCreatePipelineLayout) X(vkDestroyPipelineLayout) \
	X(vkCreateComputePipelines) X(vkDestroyPipeline) X(vkCreateCommandPool) X(vkDestroyCommandPool) \
	X(vkAllocateCommandBuffers) X(vkCreateFence) X(vkDestroyFence) X(vkResetFences) X(vkWaitForFences) \
	X(vkGetFenceStatus) X(vkCreateDescriptorPool) X(vkDestroyDescriptorPool) X(vkResetDescriptorPool) \
	X(vkAllocateDescriptorSets) X(vkUpdateDescriptorSets) X(vkCreateQueryPool) X(vkDestroyQueryPool) \
	X(vkGetQueryPoolResults) X(vkResetCommandPool) X(vkBeginCommandBuffer) X(vkEndCommandBuffer) \
	X(vkQueueSubmit) X(vkCmdBindPipeline) X(vkCmdBindDescriptorSets) X(vkCmdPushConstants) \
	X(vkCmdDispatch) X(vkCmdPipelineBarrier) X(vkCmdCopyBuffer) X(vkCmdFillBuffer) \
	X(vkCmdWriteTimestamp) X(vkCmdResetQueryPool) X(vkCreateBufferView) X(vkDestroyBufferView) \
	X(vkGetPhysicalDeviceMemoryProperties2) X(vkCmdExecuteCommands)

#define DECLARE(name) static PFN_##name p_##name;
FUNCS(DECLARE)
static PFN_vkCreateDebugUtilsMessengerEXT p_vkCreateDebugUtilsMessengerEXT;
static PFN_vkDestroyDebugUtilsMessengerEXT p_vkDestroyDebugUtilsMessengerEXT;
static PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR p_coopmat_props;
static vkamp_cm2_flex_fn p_cm2_flex;
static PFN_vkCmdPushDescriptorSetKHR p_vkCmdPushDescriptorSetKHR;
static VkDebugUtilsMessengerEXT messenger;

const char *vkamp_load(void) {
	if (gipa) return NULL;
	lib = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) lib = dlopen("libvulkan.so", RTLD_NOW | RTLD_LOCAL);
	if (!lib) return "no Vulkan loader: libvulkan.so.1 not found (install libvulkan1, and a driver such as mesa-vulkan-drivers)";
	gipa = (PFN_vkGetInstanceProcAddr)dlsym(lib, "vkGetInstanceProcAddr");
	if (!gipa) return "libvulkan.so.1 has no vkGetInstanceProcAddr";
	return NULL;
}

void *vkamp_get_instance_proc_addr(void) { return (void *)gipa; }

static VKAPI_ATTR VkBool32 VKAPI_CALL debug_cb(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
	VkDebugUtilsMessageTypeFlagsEXT type, const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
	(void)type; (void)user;
	vkampDebugMessage((int)sev, (char *)(data && data->pMessage ? data->pMessage : "(no message)"));
	return VK_FALSE;
}

static uint32_t instance_api = VK_API_VERSION_1_1;
uint32_t vkamp_instance_api(void) { return instance_api; }

VkResult vkamp_create_instance(int validation, int sync_validation, VkInstance *out) {
	PFN_vkCreateInstance create = (PFN_vkCreateInstance)gipa(NULL, "vkCreateInstance");
	if (!create) return VK_ERROR_INITIALIZATION_FAILED;
	VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
	app.pApplicationName = "vkamp";
	app.pEngineName = "vkamp";
	// Vulkan 1.3 where the loader has it, so that a 1.3 device takes SPIR-V
	// 1.6 (the cooperative_matrix2 kernels); each device still runs at its
	// own version, and vkamp asks nothing of 1.2 or 1.3 otherwise.
	app.apiVersion = VK_API_VERSION_1_1;
	PFN_vkEnumerateInstanceVersion version = (PFN_vkEnumerateInstanceVersion)gipa(NULL, "vkEnumerateInstanceVersion");
	uint32_t loader = 0;
	if (version && version(&loader) == VK_SUCCESS && loader >= VK_API_VERSION_1_3) app.apiVersion = VK_API_VERSION_1_3;
	instance_api = app.apiVersion;
	const char *layers[] = {"VK_LAYER_KHRONOS_validation"};
	const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME};
	VkDebugUtilsMessengerCreateInfoEXT dbg = {VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
	dbg.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
	dbg.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
		VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
	dbg.pfnUserCallback = debug_cb;
	VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
	VkValidationFeaturesEXT feats = {VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
	feats.enabledValidationFeatureCount = 1;
	feats.pEnabledValidationFeatures = enables;
	VkInstanceCreateInfo ci = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
	ci.pApplicationInfo = &app;
	if (validation) {
		ci.enabledLayerCount = 1;
		ci.ppEnabledLayerNames = layers;
		ci.enabledExtensionCount = sync_validation ? 2 : 1;
		ci.ppEnabledExtensionNames = exts;
		ci.pNext = &dbg;
		if (sync_validation) dbg.pNext = &feats;
	}
	VkResult r = create(&ci, NULL, out);
	if (r != VK_SUCCESS) return r;
#define LOAD(name) p_##name = (PFN_##name)gipa(*out, #name);
	FUNCS(LOAD)
	// A missing core function means a loader older than Vulkan 1.1.
	if (!p_vkGetPhysicalDeviceFeatures2 || !p_vkCmdResetQueryPool || !p_vkDestroyInstance) {
		PFN_vkDestroyInstance d = (PFN_vkDestroyInstance)gipa(*out, "vkDestroyInstance");
		if (d) d(*out, NULL);
		return VK_ERROR_INCOMPATIBLE_DRIVER;
	}
	p_coopmat_props = (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)gipa(*out,
		"vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
	p_cm2_flex = (vkamp_cm2_flex_fn)gipa(*out, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
	p_vkCmdPushDescriptorSetKHR = (PFN_vkCmdPushDescriptorSetKHR)gipa(*out, "vkCmdPushDescriptorSetKHR");
	if (validation) {
		p_vkCreateDebugUtilsMessengerEXT = (PFN_vkCreateDebugUtilsMessengerEXT)gipa(*out, "vkCreateDebugUtilsMessengerEXT");
		p_vkDestroyDebugUtilsMessengerEXT = (PFN_vkDestroyDebugUtilsMessengerEXT)gipa(*out, "vkDestroyDebugUtilsMessengerEXT");
		dbg.pNext = NULL;
		if (p_vkCreateDebugUtilsMessengerEXT) p_vkCreateDebugUtilsMessengerEXT(*out, &dbg, NULL, &messenger);
	}
	return VK_SUCCESS;
}

void vkamp_destroy_instance(VkInstance inst) {
	if (messenger && p_vkDestroyDebugUtilsMessengerEXT) p_vkDestroyDebugUtilsMessengerEXT(inst, messenger, NULL);
	messenger = 0;
	p_vkDestroyInstance(inst, NULL);
}

static int has_ext(VkExtensionProperties *e, uint32_t n, const char *name) {
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(e[i].extensionName, name) == 0) return 1;
	return 0;
}

static void vkamp_query_cm2_flex(VkPhysicalDevice pd, vkamp_caps *c);

void vkamp_query_caps(VkInstance inst, VkPhysicalDevice pd, vkamp_caps *c) {
	(void)inst;
	memset(c, 0, sizeof *c);
	uint32_t n = 0;
	p_vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
	VkExtensionProperties *e = calloc(n ? n : 1, sizeof *e);
	p_vkEnumerateDeviceExtensionProperties(pd, NULL, &n, e);
	c->has_16bit_storage_ext = has_ext(e, n, "VK_KHR_16bit_storage");
	c->has_float16_int8_ext = has_ext(e, n, "VK_KHR_shader_float16_int8");
	c->has_float_controls_ext = has_ext(e, n, "VK_KHR_shader_float_controls");
	c->has_driver_props_ext = has_ext(e, n, "VK_KHR_driver_properties");
	c->has_coopmat_ext = has_ext(e, n, "VK_KHR_cooperative_matrix");
	c->has_bf16_ext = has_ext(e, n, "VK_KHR_shader_bfloat16");
	c->has_cm2_ext = has_ext(e, n, "VK_NV_cooperative_matrix2");
	c->has_maint4_ext = has_ext(e, n, "VK_KHR_maintenance4");
	c->has_vmm_ext = has_ext(e, n, "VK_KHR_vulkan_memory_model");
	c->has_subgroup_size_control_ext = has_ext(e, n, "VK_EXT_subgroup_size_control");
	c->has_memory_budget_ext = has_ext(e, n, "VK_EXT_memory_budget");
	c->has_push_descriptor_ext = has_ext(e, n, "VK_KHR_push_descriptor") && p_vkCmdPushDescriptorSetKHR;
	free(e);

	// Only chain structs the device knows: SwiftShader prints a warning for
	// every unknown sType.
	VkPhysicalDeviceProperties2 p2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
	VkPhysicalDeviceSubgroupProperties sg = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
	VkPhysicalDeviceMaintenance3Properties m3 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
	VkPhysicalDeviceDriverPropertiesKHR drv = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES_KHR};
	VkPhysicalDeviceFloatControlsPropertiesKHR fc = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES_KHR};
	VkPhysicalDeviceIDProperties ids = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
	p2.pNext = &sg;
	sg.pNext = &m3;
	m3.pNext = &ids;
	void **tail = &ids.pNext;
	if (c->has_driver_props_ext) { *tail = &drv; tail = &drv.pNext; }
	if (c->has_float_controls_ext) { *tail = &fc; tail = &fc.pNext; }
	vkamp_cm2_props cm2p = {VKAMP_STYPE_CM2_PROPS};
	if (c->has_cm2_ext) { *tail = &cm2p; tail = &cm2p.pNext; }
	p_vkGetPhysicalDeviceProperties2(pd, &p2);
	c->cm2_max_dimension = cm2p.flexibleDimensionsMaxDimension;
	c->cm2_workgroup_max = cm2p.workgroupScopeMaxWorkgroupSize;
	c->cm2_reserved_shared = cm2p.workgroupScopeReservedSharedMemory;
	c->api_version = p2.properties.apiVersion;
	c->subgroup_size = sg.subgroupSize;
	c->subgroup_stages = sg.supportedStages;
	c->subgroup_ops = sg.supportedOperations;
	c->max_memory_allocation_size = m3.maxMemoryAllocationSize;
	memcpy(c->device_uuid, ids.deviceUUID, sizeof c->device_uuid);
	if (c->has_driver_props_ext) {
		c->driver_id = drv.driverID;
		memcpy(c->driver_name, drv.driverName, sizeof c->driver_name);
		memcpy(c->driver_info, drv.driverInfo, sizeof c->driver_info);
	}
	if (c->has_float_controls_ext) {
		c->rte16 = fc.shaderRoundingModeRTEFloat16;
		c->rte32 = fc.shaderRoundingModeRTEFloat32;
		c->denorm_preserve16 = fc.shaderDenormPreserveFloat16;
	}

	VkPhysicalDeviceFeatures2 f2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
	VkPhysicalDevice16BitStorageFeatures s16 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
	VkPhysicalDeviceShaderFloat16Int8FeaturesKHR f16 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR};
	VkPhysicalDeviceVulkanMemoryModelFeaturesKHR vmm = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR};
	VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm = {VKAMP_STYPE_COOPMAT_FEATURES};
	vkamp_bf16_features bf = {VKAMP_STYPE_BF16_FEATURES};
	f2.pNext = &s16;
	void **ftail = &s16.pNext;
	if (c->has_float16_int8_ext) { *ftail = &f16; ftail = &f16.pNext; }
	if (c->has_vmm_ext) { *ftail = &vmm; ftail = &vmm.pNext; }
	if (c->has_coopmat_ext) { *ftail = &cm; ftail = &cm.pNext; }
	if (c->has_bf16_ext) { *ftail = &bf; ftail = &bf.pNext; }
	vkamp_cm2_features cm2 = {VKAMP_STYPE_CM2_FEATURES};
	if (c->has_cm2_ext) { *ftail = &cm2; ftail = &cm2.pNext; }
	VkPhysicalDeviceMaintenance4Features m4 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES};
	if (c->has_maint4_ext) { *ftail = &m4; ftail = &m4.pNext; }
	p_vkGetPhysicalDeviceFeatures2(pd, &f2);
	c->maintenance4 = c->has_maint4_ext ? m4.maintenance4 : 0;
	if (c->has_cm2_ext) {
		c->cm2_features = (cm2.workgroupScope ? VKAMP_CM2_WORKGROUP_SCOPE : 0) |
			(cm2.flexibleDimensions ? VKAMP_CM2_FLEXIBLE_DIMENSIONS : 0) | (cm2.reductions ? VKAMP_CM2_REDUCTIONS : 0) |
			(cm2.conversions ? VKAMP_CM2_CONVERSIONS : 0) | (cm2.perElementOperations ? VKAMP_CM2_PER_ELEMENT : 0) |
			(cm2.tensorAddressing ? VKAMP_CM2_TENSOR_ADDRESSING : 0) | (cm2.blockLoads ? VKAMP_CM2_BLOCK_LOADS : 0);
	}
	c->bf16_type = c->has_bf16_ext ? bf.shaderBFloat16Type : 0;
	c->bf16_coopmat = c->has_bf16_ext ? bf.shaderBFloat16CooperativeMatrix : 0;
	c->vmm = c->has_vmm_ext ? vmm.vulkanMemoryModel : 0;
	c->vmm_device_scope = c->has_vmm_ext ? vmm.vulkanMemoryModelDeviceScope : 0;
	c->coopmat_feature = c->has_coopmat_ext ? cm.cooperativeMatrix : 0;
	c->storage_buffer_16bit = s16.storageBuffer16BitAccess;
	c->shader_int16 = f2.features.shaderInt16;
	c->shader_int64 = f2.features.shaderInt64;
	c->shader_float16 = c->has_float16_int8_ext ? f16.shaderFloat16 : 0;

	if (c->has_coopmat_ext && p_coopmat_props) {
		uint32_t k = 0;
		if (p_coopmat_props(pd, &k, NULL) == VK_SUCCESS && k > 0) {
			VkCooperativeMatrixPropertiesKHR *cp = calloc(k, sizeof *cp);
			for (uint32_t i = 0; i < k; i++) cp[i].sType = VKAMP_STYPE_COOPMAT_PROPS;
			if (p_coopmat_props(pd, &k, cp) == VK_SUCCESS) {
				for (uint32_t i = 0; i < k; i++) {
					uint32_t a = (uint32_t)cp[i].AType;
					if (a != (uint32_t)cp[i].BType || (uint32_t)cp[i].CType != VKAMP_COMPONENT_F32 ||
						(uint32_t)cp[i].ResultType != VKAMP_COMPONENT_F32 || (uint32_t)cp[i].scope != VKAMP_SCOPE_SUBGROUP) {
						continue;
					}
					uint32_t *n = a == VKAMP_COMPONENT_F16 ? &c->coopmat_f16_n : a == VKAMP_COMPONENT_BF16 ? &c->coopmat_bf16_n : NULL;
					if (n == NULL || *n == VKAMP_MAX_COOP_SHAPES) continue;
					uint32_t *shape = a == VKAMP_COMPONENT_F16 ? c->coopmat_f16[*n] : c->coopmat_bf16[*n];
					shape[0] = cp[i].MSize; shape[1] = cp[i].NSize; shape[2] = cp[i].KSize;
					(*n)++;
				}
			}
			free(cp);
		}
	}
	vkamp_query_cm2_flex(pd, c);
}

// vkamp_query_cm2_flex fills the fp16 and bf16 (x the same -> fp32)
// flexible-dimension granularities of VK_NV_cooperative_matrix2.
static void vkamp_query_cm2_flex(VkPhysicalDevice pd, vkamp_caps *c) {
	uint32_t k = 0;
	if (!c->has_cm2_ext || !p_cm2_flex || p_cm2_flex(pd, &k, NULL) != VK_SUCCESS || k == 0) return;
	vkamp_cm2_flex *fp = calloc(k, sizeof *fp);
	for (uint32_t i = 0; i < k; i++) fp[i].sType = VKAMP_STYPE_CM2_FLEX;
	if (p_cm2_flex(pd, &k, fp) == VK_SUCCESS) {
		for (uint32_t i = 0; i < k && c->cm2_flex_n < VKAMP_MAX_COOP_SHAPES; i++) {
			uint32_t a = fp[i].AType;
			if (a != fp[i].BType || (a != VKAMP_COMPONENT_F16 && a != VKAMP_COMPONENT_BF16) ||
				fp[i].CType != VKAMP_COMPONENT_F32 || fp[i].ResultType != VKAMP_COMPONENT_F32) {
				continue;
			}
			uint32_t *g = c->cm2_flex[c->cm2_flex_n++];
			g[0] = fp[i].MGranularity; g[1] = fp[i].NGranularity; g[2] = fp[i].KGranularity;
			g[3] = fp[i].scope; g[4] = fp[i].workgroupInvocations; g[5] = a == VKAMP_COMPONENT_BF16;
		}
	}
	free(fp);
}

VkResult vkamp_create_device(VkPhysicalDevice pd, uint32_t family, const vkamp_caps *c,
	int enable16, int enable_f16, int enable_coopmat, int enable_bf16_coopmat, uint32_t enable_cm2, VkDevice *dev, VkQueue *queue) {
	float prio = 1.0f;
	VkDeviceQueueCreateInfo q = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
	q.queueFamilyIndex = family;
	q.queueCount = 1;
	q.pQueuePriorities = &prio;
	const char *exts[12];
	uint32_t next = 0;
	VkPhysicalDeviceFeatures2 f2 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
	VkPhysicalDevice16BitStorageFeatures s16 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
	VkPhysicalDeviceShaderFloat16Int8FeaturesKHR f16 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES_KHR};
	// 64-bit integers let the texel forms store 8 bytes per scalar store.
	f2.features.shaderInt64 = c->shader_int64 ? VK_TRUE : VK_FALSE;
	void **tail = &f2.pNext;
	if (enable16) {
		s16.storageBuffer16BitAccess = VK_TRUE;
		*tail = &s16; tail = &s16.pNext;
		if (c->has_16bit_storage_ext) exts[next++] = "VK_KHR_16bit_storage";
	}
	if (enable_f16) {
		f16.shaderFloat16 = VK_TRUE;
		*tail = &f16; tail = &f16.pNext;
		exts[next++] = "VK_KHR_shader_float16_int8";
	}
	if (c->has_float_controls_ext) exts[next++] = "VK_KHR_shader_float_controls";
	if (c->has_push_descriptor_ext) exts[next++] = "VK_KHR_push_descriptor";
	VkPhysicalDeviceVulkanMemoryModelFeaturesKHR vmm = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES_KHR};
	VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm = {VKAMP_STYPE_COOPMAT_FEATURES};
	if (enable_coopmat) {
		vmm.vulkanMemoryModel = VK_TRUE;
		vmm.vulkanMemoryModelDeviceScope = c->vmm_device_scope ? VK_TRUE : VK_FALSE;
		*tail = &vmm; tail = &vmm.pNext;
		exts[next++] = "VK_KHR_vulkan_memory_model";
		cm.cooperativeMatrix = VK_TRUE;
		*tail = &cm; tail = &cm.pNext;
		exts[next++] = "VK_KHR_cooperative_matrix";
	}
	vkamp_bf16_features bf = {VKAMP_STYPE_BF16_FEATURES};
	if (enable_coopmat && enable_bf16_coopmat) {
		bf.shaderBFloat16Type = VK_TRUE;
		bf.shaderBFloat16CooperativeMatrix = VK_TRUE;
		*tail = &bf; tail = &bf.pNext;
		exts[next++] = "VK_KHR_shader_bfloat16";
	}
	vkamp_cm2_features cm2 = {VKAMP_STYPE_CM2_FEATURES};
	if (enable_coopmat && enable_cm2) {
		cm2.workgroupScope = (enable_cm2 & VKAMP_CM2_WORKGROUP_SCOPE) != 0;
		cm2.flexibleDimensions = (enable_cm2 & VKAMP_CM2_FLEXIBLE_DIMENSIONS) != 0;
		cm2.reductions = (enable_cm2 & VKAMP_CM2_REDUCTIONS) != 0;
		cm2.conversions = (enable_cm2 & VKAMP_CM2_CONVERSIONS) != 0;
		cm2.perElementOperations = (enable_cm2 & VKAMP_CM2_PER_ELEMENT) != 0;
		cm2.tensorAddressing = (enable_cm2 & VKAMP_CM2_TENSOR_ADDRESSING) != 0;
		cm2.blockLoads = (enable_cm2 & VKAMP_CM2_BLOCK_LOADS) != 0;
		*tail = &cm2; tail = &cm2.pNext;
		exts[next++] = "VK_NV_cooperative_matrix2";
	}
	// SPIR-V 1.6 kernels (cooperative_matrix2's) declare their workgroup
	// size with LocalSizeId, which needs maintenance4.
	VkPhysicalDeviceMaintenance4Features m4 = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES};
	if (enable_coopmat && enable_cm2 && c->maintenance4) {
		m4.maintenance4 = VK_TRUE;
		*tail = &m4; tail = &m4.pNext;
		exts[next++] = "VK_KHR_maintenance4";
	}
	VkDeviceCreateInfo ci = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
	ci.pNext = &f2;
	ci.queueCreateInfoCount = 1;
	ci.pQueueCreateInfos = &q;
	ci.enabledExtensionCount = next;
	ci.ppEnabledExtensionNames = exts;
	VkResult r = p_vkCreateDevice(pd, &ci, NULL, dev);
	if (r != VK_SUCCESS) return r;
	p_vkGetDeviceQueue(*dev, family, 0, queue);
	return VK_SUCCESS;
}

void vkamp_destroy_device(VkDevice dev) { p_vkDestroyDevice(dev, NULL); }
VkResult vkamp_device_wait_idle(VkDevice dev) { return p_vkDeviceWaitIdle(dev); }

VkResult vkamp_create_block(VkDevice dev, VkPhysicalDevice pd, uint64_t size, uint32_t type_bits_wanted,
	uint32_t required, uint32_t preferred, const uint64_t *heap_room, VkBuffer *buf, VkDeviceMemory *mem,
	void **mapped, uint32_t *type_index, uint32_t *heap, uint64_t *alloc_size, int *refused) {
	*buf = 0; *mem = 0; *mapped = NULL; *heap = 0; *alloc_size = size; *refused = 0;
	VkBufferCreateInfo bi = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
	bi.size = size;
	bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
		VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
	bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
	VkResult r = p_vkCreateBuffer(dev, &bi, NULL, buf);
	if (r != VK_SUCCESS) { *buf = 0; return r; }
	VkMemoryRequirements req;
	p_vkGetBufferMemoryRequirements(dev, *buf, &req);
	VkPhysicalDeviceMemoryProperties mp;
	p_vkGetPhysicalDeviceMemoryProperties(pd, &mp);
	int best = -1;
	for (uint32_t pass = 0; pass < 2 && best < 0; pass++) {
		uint32_t want = pass == 0 ? (required | preferred) : required;
		for (uint32_t i = 0; i < mp.memoryTypeCount; i++) {
			if (!(req.memoryTypeBits & (1u << i)) || !(type_bits_wanted & (1u << i))) continue;
			if ((mp.memoryTypes[i].propertyFlags & want) == want) { best = (int)i; break; }
		}
	}
	if (best < 0) { p_vkDestroyBuffer(dev, *buf, NULL); *buf = 0; return VK_ERROR_FEATURE_NOT_PRESENT; }
	*heap = mp.memoryTypes[best].heapIndex;
	*alloc_size = req.size;
	if (req.size > heap_room[*heap]) {
		p_vkDestroyBuffer(dev, *buf, NULL);
		*buf = 0;
		*refused = 1;
		return VK_ERROR_OUT_OF_DEVICE_MEMORY;
	}
	VkMemoryAllocateInfo ai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
	ai.allocationSize = req.size;
	ai.memoryTypeIndex = (uint32_t)best;
	r = p_vkAllocateMemory(dev, &ai, NULL, mem);
	if (r != VK_SUCCESS) { p_vkDestroyBuffer(dev, *buf, NULL); *buf = 0; *mem = 0; return r; }
	r = p_vkBindBufferMemory(dev, *buf, *mem, 0);
	if (r == VK_SUCCESS && (mp.memoryTypes[best].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
		r = p_vkMapMemory(dev, *mem, 0, VK_WHOLE_SIZE, 0, mapped);
	if (r != VK_SUCCESS) { vkamp_destroy_block(dev, *buf, *mem); *buf = 0; *mem = 0; *mapped = NULL; return r; }
	*type_index = (uint32_t)best;
	return VK_SUCCESS;
}

int vkamp_heap_budget(VkPhysicalDevice pd, uint32_t n, uint64_t *budget, uint64_t *usage) {
	if (!p_vkGetPhysicalDeviceMemoryProperties2) return 0;
	VkPhysicalDeviceMemoryBudgetPropertiesEXT mb = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT};
	VkPhysicalDeviceMemoryProperties2 mp = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2};
	mp.pNext = &mb;
	p_vkGetPhysicalDeviceMemoryProperties2(pd, &mp);
	for (uint32_t i = 0; i < n && i < VK_MAX_MEMORY_HEAPS; i++) {
		budget[i] = mb.heapBudget[i];
		usage[i] = mb.heapUsage[i];
	}
	return 1;
}

VkResult vkamp_create_view(VkDevice dev, VkBuffer buf, uint64_t offset, uint64_t range, VkBufferView *out) {
	VkBufferViewCreateInfo ci = {VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
	ci.buffer = buf;
	ci.format = VK_FORMAT_R32G32B32A32_UINT;
	ci.offset = offset;
	ci.range = range;
	return p_vkCreateBufferView(dev, &ci, NULL, out);
}

void vkamp_destroy_view(VkDevice dev, VkBufferView v) { if (v) p_vkDestroyBufferView(dev, v, NULL); }

void vkamp_destroy_block(VkDevice dev, VkBuffer buf, VkDeviceMemory mem) {
	if (buf) p_vkDestroyBuffer(dev, buf, NULL);
	if (mem) p_vkFreeMemory(dev, mem, NULL); // unmaps implicitly
}

VkResult vkamp_create_pipeline_cache(VkDevice dev, const void *data, size_t size, VkPipelineCache *out) {
	VkPipelineCacheCreateInfo ci = {VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
	ci.initialDataSize = size;
	ci.pInitialData = data;
	VkResult r = p_vkCreatePipelineCache(dev, &ci, NULL, out);
	if (r != VK_SUCCESS && size > 0) { // a stale or corrupt cache file: start empty
		ci.initialDataSize = 0;
		ci.pInitialData = NULL;
		r = p_vkCreatePipelineCache(dev, &ci, NULL, out);
	}
	return r;
}

VkResult vkamp_get_pipeline_cache_data(VkDevice dev, VkPipelineCache c, size_t *size, void *data) {
	return p_vkGetPipelineCacheData(dev, c, size, data);
}

void vkamp_destroy_pipeline_cache(VkDevice dev, VkPipelineCache c) { p_vkDestroyPipelineCache(dev, c, NULL); }

VkResult vkamp_create_kernel(VkDevice dev, VkPipelineCache cache, const uint32_t *code, size_t code_size,
	uint32_t nbind, const uint32_t *texel, uint32_t push_size, const uint32_t *spec, uint32_t nspec,
	int push_desc, VkDescriptorSetLayout *set_layout, VkPipelineLayout *layout, VkPipeline *pipeline) {
	*set_layout = 0; *layout = 0; *pipeline = 0;
	VkDescriptorSetLayoutBinding b[32];
	if (nbind > 32) return VK_ERROR_INITIALIZATION_FAILED;
	for (uint32_t i = 0; i < nbind; i++) {
		VkDescriptorType t = texel[i] ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
		b[i] = (VkDescriptorSetLayoutBinding){i, t, 1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
	}
	VkDescriptorSetLayoutCreateInfo dl = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
	dl.flags = push_desc ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0;
	dl.bindingCount = nbind;
	dl.pBindings = b;
	VkResult r = p_vkCreateDescriptorSetLayout(dev, &dl, NULL, set_layout);
	if (r != VK_SUCCESS) { *set_layout = 0; return r; }
	VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size};
	VkPipelineLayoutCreateInfo pl = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
	pl.setLayoutCount = 1;
	pl.pSetLayouts = set_layout;
	pl.pushConstantRangeCount = push_size ? 1 : 0;
	pl.pPushConstantRanges = &pr;
	r = p_vkCreatePipelineLayout(dev, &pl, NULL, layout);
	if (r != VK_SUCCESS) { *layout = 0; goto fail; }
	VkShaderModuleCreateInfo sm = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
	sm.codeSize = code_size;
	sm.pCode = code;
	// spec holds (id, value) pairs; the caller checks nspec against the bound.
	VkSpecializationMapEntry entries[VKAMP_MAX_SPEC];
	uint32_t values[VKAMP_MAX_SPEC];
	if (nspec > VKAMP_MAX_SPEC) { r = VK_ERROR_INITIALIZATION_FAILED; goto fail; }
	VkShaderModule mod;
	r = p_vkCreateShaderModule(dev, &sm, NULL, &mod);
	if (r != VK_SUCCESS) goto fail;
	for (uint32_t i = 0; i < nspec; i++) {
		entries[i] = (VkSpecializationMapEntry){spec[2 * i], i * 4, 4};
		values[i] = spec[2 * i + 1];
	}
	VkSpecializationInfo si = {nspec, entries, nspec * 4, values};
	VkComputePipelineCreateInfo ci = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
	ci.stage = (VkPipelineShaderStageCreateInfo){VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
	ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
	ci.stage.module = mod;
	ci.stage.pName = "main";
	ci.stage.pSpecializationInfo = nspec ? &si : NULL;
	ci.layout = *layout;
	r = p_vkCreateComputePipelines(dev, cache, 1, &ci, NULL, pipeline);
	p_vkDestroyShaderModule(dev, mod, NULL);
	if (r != VK_SUCCESS) { *pipeline = 0; goto fail; }
	return VK_SUCCESS;
fail:
	vkamp_destroy_kernel(dev, *set_layout, *layout, 0);
	*set_layout = 0; *layout = 0;
	return r;
}

void vkamp_destroy_kernel(VkDevice dev, VkDescriptorSetLayout set_layout, VkPipelineLayout layout, VkPipeline pipeline) {
	if (pipeline) p_vkDestroyPipeline(dev, pipeline, NULL);
	if (layout) p_vkDestroyPipelineLayout(dev, layout, NULL);
	if (set_layout) p_vkDestroyDescriptorSetLayout(dev, set_layout, NULL);
}

// create_cmd gives s a command pool and one command buffer of the level;
// on failure the caller's vkamp_destroy_slot frees what was made.
static VkResult create_cmd(VkDevice dev, uint32_t family, VkCommandPoolCreateFlags flags,
	VkCommandBufferLevel level, vkamp_slot *s) {
	VkCommandPoolCreateInfo cp = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
	cp.flags = flags;
	cp.queueFamilyIndex = family;
	if (level == VK_COMMAND_BUFFER_LEVEL_PRIMARY) { // a secondary is recorded once, replayed many times
		s->arena = vkamp_arena_new();
		if (!s->arena) return VK_ERROR_OUT_OF_HOST_MEMORY;
	}
	VkResult r = p_vkCreateCommandPool(dev, &cp, vkamp_arena_callbacks(s->arena), &s->cmd_pool);
	if (r != VK_SUCCESS) return r;
	VkCommandBufferAllocateInfo ai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
	ai.commandPool = s->cmd_pool;
	ai.level = level;
	ai.commandBufferCount = 1;
	return p_vkAllocateCommandBuffers(dev, &ai, &s->cmd);
}

// create_desc_pool makes a pool for max_sets sets of storage and texel
// bindings (max_descriptors of each).
static VkResult create_desc_pool(VkDevice dev, uint32_t max_sets, uint32_t max_descriptors, VkDescriptorPool *pool) {
	VkDescriptorPoolSize ps[2] = {{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, max_descriptors},
		{VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, max_descriptors}};
	VkDescriptorPoolCreateInfo dp = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
	dp.maxSets = max_sets;
	dp.poolSizeCount = 2;
	dp.pPoolSizes = ps;
	return p_vkCreateDescriptorPool(dev, &dp, NULL, pool);
}

VkResult vkamp_create_slot(VkDevice dev, uint32_t family, uint32_t max_sets, uint32_t max_descriptors,
	uint32_t queries, int push_desc, vkamp_slot *s) {
	memset(s, 0, sizeof *s);
	s->push_desc = push_desc ? 1 : 0;
	VkResult r = create_cmd(dev, family, VK_COMMAND_POOL_CREATE_TRANSIENT_BIT, VK_COMMAND_BUFFER_LEVEL_PRIMARY, s);
	if (r != VK_SUCCESS) goto fail;
	VkFenceCreateInfo fi = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
	r = p_vkCreateFence(dev, &fi, NULL, &s->fence);
	if (r != VK_SUCCESS) goto fail;
	if (!push_desc) { // pushed descriptors need no pool
		r = create_desc_pool(dev, max_sets, max_descriptors, &s->desc_pool);
		if (r != VK_SUCCESS) goto fail;
	}
	if (queries) {
		VkQueryPoolCreateInfo qi = {VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
		qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
		qi.queryCount = queries;
		r = p_vkCreateQueryPool(dev, &qi, NULL, &s->query_pool);
		if (r != VK_SUCCESS) goto fail;
	}
	return VK_SUCCESS;
fail:
	vkamp_destroy_slot(dev, s);
	return r;
}

void vkamp_destroy_slot(VkDevice dev, vkamp_slot *s) {
	if (s->query_pool) p_vkDestroyQueryPool(dev, s->query_pool, NULL);
	if (s->desc_pool) p_vkDestroyDescriptorPool(dev, s->desc_pool, NULL);
	if (s->fence) p_vkDestroyFence(dev, s->fence, NULL);
	if (s->cmd_pool) p_vkDestroyCommandPool(dev, s->cmd_pool, vkamp_arena_callbacks(s->arena)); // frees s->cmd
	vkamp_arena_destroy(s->arena); // after the pool: nothing of the driver's is left in it
	memset(s, 0, sizeof *s);
}

VkResult vkamp_reset_slot(VkDevice dev, vkamp_slot *s) {
	VkResult r = p_vkResetCommandPool(dev, s->cmd_pool, 0);
	vkamp_arena_rewind(s->arena);
	if (r != VK_SUCCESS) return r;
	if (s->desc_pool) r = p_vkResetDescriptorPool(dev, s->desc_pool, 0);
	return r;
}

VkResult vkamp_begin(VkDevice dev, vkamp_slot *s, uint32_t queries) {
	s->bound = 0;
	vkamp_arena_begin(s->arena);
	VkResult r = p_vkResetFences(dev, 1, &s->fence);
	if (r != VK_SUCCESS) return r;
	VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
	bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
	r = p_vkBeginCommandBuffer(s->cmd, &bi);
	if (r != VK_SUCCESS) return r;
	if (queries && s->query_pool) p_vkCmdResetQueryPool(s->cmd, s->query_pool, 0, queries);
	return VK_SUCCESS;
}

VkResult vkamp_submit(VkQueue q, vkamp_slot *s) {
	VkResult r = p_vkEndCommandBuffer(s->cmd);
	if (r != VK_SUCCESS) return r;
	VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
	si.commandBufferCount = 1;
	si.pCommandBuffers = &s->cmd;
	return p_vkQueueSubmit(q, 1, &si, s->fence);
}

VkResult vkamp_wait(VkDevice dev, vkamp_slot *s, uint64_t timeout_ns) {
	return p_vkWaitForFences(dev, 1, &s->fence, VK_TRUE, timeout_ns);
}

VkResult vkamp_fence_status(VkDevice dev, vkamp_slot *s) { return p_vkGetFenceStatus(dev, s->fence); }

VkResult vkamp_query_results(VkDevice dev, vkamp_slot *s, uint32_t n, uint64_t *out) {
	if (n == 0) return VK_SUCCESS;
	return p_vkGetQueryPoolResults(dev, s->query_pool, 0, n, n * sizeof(uint64_t), out, sizeof(uint64_t),
		VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
}

VkResult vkamp_cmd_dispatch(VkDevice dev, vkamp_slot *s, VkPipeline pipeline, VkPipelineLayout layout,
	VkDescriptorSetLayout set_layout, uint32_t nbind, const vkamp_dispatch_args *a, uint32_t push_size,
	uint32_t gx, uint32_t gy, uint32_t gz, int32_t ts, int barrier) {
	if (barrier) vkamp_cmd_barrier(s); // first, as if recorded on its own: nothing below undoes it
	if (nbind > VKAMP_MAX_BINDINGS || push_size > VKAMP_MAX_PUSH) return VK_ERROR_INITIALIZATION_FAILED;
	VkDescriptorSet set = 0;
	if (!s->push_desc) {
		VkDescriptorSetAllocateInfo ai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
		ai.descriptorPool = s->desc_pool;
		ai.descriptorSetCount = 1;
		ai.pSetLayouts = &set_layout;
		VkResult r = p_vkAllocateDescriptorSets(dev, &ai, &set);
		if (r != VK_SUCCESS) return r;
	}
	VkDescriptorBufferInfo info[VKAMP_MAX_BINDINGS];
	VkWriteDescriptorSet w[VKAMP_MAX_BINDINGS];
	for (uint32_t i = 0; i < nbind; i++) {
		info[i] = (VkDescriptorBufferInfo){a->bufs[i], a->offs[i], a->ranges[i]};
		w[i] = (VkWriteDescriptorSet){VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
		w[i].dstSet = set; // ignored when pushed
		w[i].dstBinding = i;
		w[i].descriptorCount = 1;
		if (a->views[i]) {
			w[i].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
			w[i].pTexelBufferView = (const VkBufferView *)&a->views[i];
		} else {
			w[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
			w[i].pBufferInfo = &info[i];
		}
	}
	if (ts >= 0) p_vkCmdWriteTimestamp(s->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, s->query_pool, (uint32_t)ts);
	if (s->bound != pipeline) {
		p_vkCmdBindPipeline(s->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
		s->bound = pipeline;
	}
	if (s->push_desc) {
		p_vkCmdPushDescriptorSetKHR(s->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, nbind, w);
	} else {
		p_vkUpdateDescriptorSets(dev, nbind, w, 0, NULL);
		p_vkCmdBindDescriptorSets(s->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0, NULL);
	}
	if (push_size) p_vkCmdPushConstants(s->cmd, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size, a->push);
	p_vkCmdDispatch(s->cmd, gx, gy, gz);
	if (ts >= 0) p_vkCmdWriteTimestamp(s->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, s->query_pool, (uint32_t)ts + 1);
	return VK_SUCCESS;
}

VkResult vkamp_record_dispatches(VkDevice dev, vkamp_slot *s, const VkPipeline *pipelines,
	const VkPipelineLayout *layouts, const VkDescriptorSetLayout *set_layouts, uint32_t nk, uint32_t nbind,
	const vkamp_dispatch_args *a, uint32_t push_size, uint32_t gx, uint32_t gy, uint32_t gz, uint32_t n, int barrier) {
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = i % nk;
		VkResult r = vkamp_cmd_dispatch(dev, s, pipelines[k], layouts[k], set_layouts[k], nbind, a, push_size,
			gx, gy, gz, -1, barrier);
		if (r != VK_SUCCESS) return r;
	}
	return VK_SUCCESS;
}

// vkamp_cmd_barrier orders all earlier compute and transfer work before all
// later: one global memory barrier, as ggml does, placed only where the
// hazard tracker finds a dependency.
void vkamp_cmd_barrier(vkamp_slot *s) {
	VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
	mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
		VK_ACCESS_TRANSFER_READ_BIT;
	mb.dstAccessMask = mb.srcAccessMask;
	VkPipelineStageFlags st = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
	p_vkCmdPipelineBarrier(s->cmd, st, st, 0, 1, &mb, 0, NULL, 0, NULL);
}

// vkamp_cmd_host_barrier makes device writes visible to host reads after the
// batch's fence.
void vkamp_cmd_host_barrier(vkamp_slot *s) {
	VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
	mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
	mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
	p_vkCmdPipelineBarrier(s->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
		VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
}

void vkamp_cmd_copy(vkamp_slot *s, VkBuffer src, uint64_t src_off, VkBuffer dst, uint64_t dst_off, uint64_t size) {
	VkBufferCopy c = {src_off, dst_off, size};
	p_vkCmdCopyBuffer(s->cmd, src, dst, 1, &c);
}

void vkamp_cmd_fill(vkamp_slot *s, VkBuffer dst, uint64_t off, uint64_t size, uint32_t value) {
	p_vkCmdFillBuffer(s->cmd, dst, off, size, value);
}

// Captured command sequences (capture.go): secondary command buffers that
// may be executed again while an earlier execution is pending.
VkResult vkamp_create_secondary(VkDevice dev, uint32_t family, uint32_t max_sets, uint32_t max_descriptors,
	int push_desc, vkamp_slot *s) {
	memset(s, 0, sizeof *s);
	s->push_desc = push_desc ? 1 : 0;
	VkResult r = create_cmd(dev, family, 0, VK_COMMAND_BUFFER_LEVEL_SECONDARY, s);
	if (r != VK_SUCCESS) goto fail;
	if (!push_desc) {
		r = create_desc_pool(dev, max_sets, max_descriptors, &s->desc_pool);
		if (r != VK_SUCCESS) goto fail;
	}
	VkCommandBufferInheritanceInfo inh = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_INHERITANCE_INFO};
	VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
	bi.flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT;
	bi.pInheritanceInfo = &inh;
	r = p_vkBeginCommandBuffer(s->cmd, &bi);
	if (r != VK_SUCCESS) goto fail;
	return VK_SUCCESS;
fail:
	vkamp_destroy_slot(dev, s);
	return r;
}

VkResult vkamp_end_secondary(vkamp_slot *s) { return p_vkEndCommandBuffer(s->cmd); }

void vkamp_cmd_execute(vkamp_slot *s, uint32_t n, const VkCommandBuffer *cmds) {
	if (n) p_vkCmdExecuteCommands(s->cmd, n, cmds);
	s->bound = 0; // the primary's bound pipeline is undefined after it
}

void vkamp_cmd_replay(vkamp_slot *s, uint32_t n, const VkCommandBuffer *cmds) {
	vkamp_cmd_barrier(s);
	vkamp_cmd_execute(s, n, cmds);
	vkamp_cmd_barrier(s);
}

