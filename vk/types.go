package vk

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// DeviceType is the kind of physical device, in Vulkan's terms.
type DeviceType int

const (
	TypeOther DeviceType = iota
	TypeIntegrated
	TypeDiscrete
	TypeVirtual
	TypeCPU
)

var typeNames = [...]string{"other", "integrated", "discrete", "virtual", "cpu"}

func (t DeviceType) String() string {
	if t < 0 || int(t) >= len(typeNames) {
		return fmt.Sprintf("DeviceType(%d)", int(t))
	}
	return typeNames[t]
}

// MarshalText writes the type's name in JSON.
func (t DeviceType) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// preference orders device types for automatic choice: higher is better.
func (t DeviceType) preference() int {
	return [...]int{1, 3, 4, 2, 0}[t]
}

// Tier is the capability level that decides which kernel variants a device
// runs; the shaders package labels each kernel variant with one.
type Tier int

const (
	// TierPacked stores fp16 two per uint32 word and computes in fp32. Every
	// device can run it (SwiftShader has nothing more).
	TierPacked Tier = iota
	// TierStorage16 reads and writes 16-bit values in storage buffers.
	TierStorage16
	// TierFP16 also has native float16_t arithmetic.
	TierFP16
)

var tierNames = [...]string{"packed", "storage16", "fp16"}

func (t Tier) String() string {
	if t < 0 || int(t) >= len(tierNames) {
		return fmt.Sprintf("Tier(%d)", int(t))
	}
	return tierNames[t]
}

// MarshalText writes the tier's name in JSON.
func (t Tier) MarshalText() ([]byte, error) { return []byte(t.String()), nil }

// ParseTier reads a tier name as VKAMP_TIER gives it.
func ParseTier(s string) (Tier, error) {
	for i, n := range tierNames {
		if n == s {
			return Tier(i), nil
		}
	}
	return 0, fmt.Errorf("vk: unknown tier %q (want packed, storage16 or fp16)", s)
}

// Heap is one memory heap of a device.
type Heap struct {
	Size        uint64 `json:"size"`
	DeviceLocal bool   `json:"device_local"`
}

// HeapUse is how much of one memory heap vkamp may use and uses (see
// Device.Memory).
type HeapUse struct {
	Size uint64 `json:"size"` // the heap's size
	// Budget is the most vkamp's memory blocks may hold in the heap: its
	// size, or less where VK_EXT_memory_budget says the process may use less.
	Budget uint64 `json:"budget"`
	// Used is what vkamp's memory blocks hold in the heap, over every Device
	// of the process on this physical device.
	Used uint64 `json:"used"`
}

// Info describes a physical device and the capabilities that matter to vkamp.
type Info struct {
	Index         int        `json:"index"`
	Name          string     `json:"name"`
	Vendor        string     `json:"vendor"`
	VendorID      uint32     `json:"vendor_id"`
	DeviceID      uint32     `json:"device_id"`
	Type          DeviceType `json:"type"`
	APIVersion    string     `json:"api_version"`
	Driver        DriverID   `json:"driver_id"` // which driver, as VkDriverId names it
	DriverName    string     `json:"driver_name"`
	DriverInfo    string     `json:"driver_info"`
	DriverVersion uint32     `json:"driver_version"`
	CacheUUID     string     `json:"pipeline_cache_uuid"`
	DeviceUUID    string     `json:"device_uuid"` // VkPhysicalDeviceIDProperties.deviceUUID
	Heaps         []Heap     `json:"heaps"`

	ShaderFloat16         bool `json:"shader_float16"`
	StorageBuffer16Bit    bool `json:"storage_buffer_16bit_access"`
	ShaderInt16           bool `json:"shader_int16"`
	ShaderInt64           bool `json:"shader_int64"`
	RoundingRTEFloat16    bool `json:"rounding_rte_float16"`
	RoundingRTEFloat32    bool `json:"rounding_rte_float32"`
	DenormPreserveFloat16 bool `json:"denorm_preserve_float16"`

	SubgroupSize       uint32   `json:"subgroup_size"`
	SubgroupOperations []string `json:"subgroup_operations"`
	SubgroupInCompute  bool     `json:"subgroup_in_compute"`

	MaxSharedMemory          uint32    `json:"max_compute_shared_memory"`
	MaxWorkgroupSize         [3]uint32 `json:"max_workgroup_size"`
	MaxWorkgroupInvocations  uint32    `json:"max_workgroup_invocations"`
	MaxWorkgroupCount        [3]uint32 `json:"max_workgroup_count"`
	MaxStorageBufferRange    uint32    `json:"max_storage_buffer_range"`
	MaxTexelBufferElements   uint32    `json:"max_texel_buffer_elements"`
	MaxMemoryAllocationCount uint32    `json:"max_memory_allocation_count"`
	MaxMemoryAllocationSize  uint64    `json:"max_memory_allocation_size"`
	MinStorageBufferAlign    uint64    `json:"min_storage_buffer_offset_alignment"`
	MinTexelBufferAlign      uint64    `json:"min_texel_buffer_offset_alignment"`
	MaxPushConstantsSize     uint32    `json:"max_push_constants_size"`

	Timestamps      bool    `json:"timestamps"`
	TimestampPeriod float32 `json:"timestamp_period_ns"`

	CooperativeMatrix bool `json:"cooperative_matrix"`
	// The subgroup-scope shapes (M, N, K) the device lists with fp32
	// accumulators and results, in its order: fp16 x fp16, and bf16 x bf16.
	CooperativeMatrixShapes     [][3]uint32 `json:"cooperative_matrix_f16_f32_shapes,omitempty"`
	CooperativeMatrixBF16Shapes [][3]uint32 `json:"cooperative_matrix_bf16_f32_shapes,omitempty"`
	// CooperativeMatrixUsable says that cooperative-matrix kernels run:
	// VK_KHR_cooperative_matrix with an fp16 x fp16 -> fp32 subgroup shape,
	// its cooperativeMatrix feature and the Vulkan memory model, which Open
	// enables, at the fp16 tier. For an open device it is false when a lower
	// tier was asked for. CooperativeMatrixBF16Usable says the same of bf16
	// inputs: a bf16 shape and VK_KHR_shader_bfloat16's shaderBFloat16Type
	// and shaderBFloat16CooperativeMatrix, which Open enables too.
	CooperativeMatrixUsable     bool `json:"cooperative_matrix_usable"`
	CooperativeMatrixBF16Usable bool `json:"cooperative_matrix_bf16_usable"`
	// CooperativeMatrix2 is what VK_NV_cooperative_matrix2 offers; Open
	// enables every feature listed, with cooperative matrices.
	CooperativeMatrix2 *CoopMat2 `json:"cooperative_matrix2,omitempty"`

	// MemoryBudget is true when the device reports how much memory the
	// process may use (VK_EXT_memory_budget); allocations are then held to
	// that as well as to the heap's size.
	MemoryBudget bool `json:"memory_budget"`

	// HostMapped is true when buffers live in memory the host maps (CPU and
	// integrated devices): host reads and writes copy directly, with no
	// staging transfer.
	HostMapped bool `json:"host_mapped_memory"`

	// Tier is the highest tier the device supports.
	Tier Tier `json:"tier"`

	// PushDescriptors is true when the device has VK_KHR_push_descriptor:
	// a dispatch then pushes its buffers into the command buffer instead of
	// allocating and writing a descriptor set. For an open device it is
	// false when Options.DescriptorSets asked for sets.
	PushDescriptors bool `json:"push_descriptors"`

	drv *driverInfo // what the runtime needs to open it
}

var subgroupOpNames = []string{"basic", "vote", "arithmetic", "ballot", "shuffle", "shuffle_relative", "clustered", "quad"}

var vendorNames = map[uint32]string{
	0x10DE: "NVIDIA", 0x1002: "AMD", 0x8086: "Intel", 0x13B5: "ARM", 0x5143: "Qualcomm",
	0x1010: "ImgTec", 0x106B: "Apple", 0x10005: "Mesa", 0x1AE0: "Google",
}

// Options configure Open. The zero value picks the best device, its highest
// tier, and sensible sizes.
type Options struct {
	// Device is a device index or a case-insensitive substring of its name.
	// Empty means the VKAMP_DEVICE environment variable, else the best device
	// by type: discrete, integrated, virtual, then CPU.
	Device string
	// Tier caps the kernel tier; empty means VKAMP_TIER, else the device's best.
	Tier string
	// BlockSize is the size of the memory blocks buffers are cut from.
	BlockSize int64
	// StagingSize is the size of the staging ring.
	StagingSize int64
	// ForceStaging sends every host read and write through the staging ring,
	// as on a discrete GPU, even where memory can be mapped.
	ForceStaging bool
	// BatchSize is the number of dispatches per queue submission.
	BatchSize int
	// Timestamps records the device time of every dispatch (see KernelTimes).
	Timestamps bool
	// PipelineCacheDir holds the persisted pipeline cache; empty means the
	// user's cache directory, "off" disables it.
	PipelineCacheDir string
	// WaitTimeout bounds each wait for the device; 0 means ten minutes (a
	// software driver on a loaded machine can take long).
	WaitTimeout time.Duration
	// Deterministic runs the kernels whose arithmetic is fixed by vkamp
	// rather than by the driver (see Device.Deterministic); false means
	// VKAMP_DETERMINISTIC, else the fast kernels.
	Deterministic bool
	// DescriptorSets allocates a descriptor set per dispatch even where the
	// device has push descriptors (to test that path on such a device).
	DescriptorSets bool
	// Matmul forces the matmul kernel kind, one of MatmulKinds; empty means
	// VKAMP_MATMUL, else the device's rule (tensor's forms). Open refuses a
	// kind the device cannot run.
	Matmul string
	// NoTune turns the matmul autotuner off; false means VKAMP_TUNE ("off"
	// turns it off too).
	NoTune bool
	// TuneDir is where tuned tiles are stored; empty means VKAMP_TUNE_DIR,
	// else the user's cache directory.
	TuneDir string
	// PlainForms runs every kernel family's plain (storage-buffer) form, as
	// a GPU does, where the forms table would pick a CPU driver's texel
	// form: to measure those forms against the plain ones (tools/bench
	// -forms) or to test the plain forms on a CPU driver. false means
	// VKAMP_PLAIN_FORMS.
	PlainForms bool
}

func (o *Options) waitTimeout() time.Duration {
	if o.WaitTimeout > 0 {
		return o.WaitTimeout
	}
	return 10 * time.Minute
}

// Stats counts what a device has done, for tests and benchmarks.
type Stats struct {
	Dispatches     uint64 // kernel launches recorded
	Copies         uint64 // copies and fills recorded
	Barriers       uint64 // pipeline barriers recorded
	Submits        uint64 // queue submissions
	Waits          uint64 // host waits on a fence for a result (reads, Wait, Close)
	Stalls         uint64 // host waits for a free command buffer: recording ran ahead of the device
	DescriptorSets uint64 // descriptor sets written, or pushed (Info.PushDescriptors): one a dispatch
	Pipelines      int    // pipelines created
	TexelViews     int    // texel views created (one per buffer range, reused)
	Allocations    uint64 // VkDeviceMemory allocations made
	MemoryBlocks   int    // VkDeviceMemory blocks alive
	DeviceBytes    uint64 // bytes in those blocks
	LiveBuffers    int    // Buffers not yet freed
	BufferBytes    uint64 // bytes reserved by those Buffers
}

// KernelTime is the device time spent in one kernel, from timestamps.
type KernelTime struct {
	Name        string
	Count       int
	Nanoseconds float64
}

// Access says how a kernel uses one of its storage-buffer bindings; the
// runtime derives barriers from it.
type Access uint8

const (
	Read  Access = 1 << iota // the kernel reads the binding
	Write                    // the kernel writes the binding
	// Texels binds a read-only binding as a uniform texel buffer
	// (usamplerBuffer) of 16-byte uvec4 texels: the buffer must start on a
	// 16-byte boundary and hold at most MaxTexelBufferElements texels (see
	// Buffer.TexelsFit). Views are made on first use of a byte range and
	// kept with its memory block. lavapipe fetches texels with SIMD gathers,
	// where it loads storage buffers lane by lane (about 17 times faster per
	// byte, measured).
	Texels
	ReadWrite = Read | Write
)

// KernelSource describes a compute shader: its SPIR-V and the layout metadata
// generated with it.
type KernelSource struct {
	Name     string
	SPIRV    []byte
	Bindings []Access // descriptor set 0, binding i
	PushSize int      // bytes of push constants
	// Spec sets specialization constants by ID (for example the workgroup
	// size through constant 0).
	Spec map[uint32]uint32
}

func (s *KernelSource) key() string {
	ids := make([]int, 0, len(s.Spec))
	for id := range s.Spec {
		ids = append(ids, int(id))
	}
	sort.Ints(ids)
	var b strings.Builder
	b.WriteString(s.Name)
	for _, id := range ids {
		fmt.Fprintf(&b, ",%d=%d", id, s.Spec[uint32(id)])
	}
	return b.String()
}

// ValidationEnabled reports whether VKAMP_VALIDATION asked for the Khronos
// validation layer. Its messages are collected by ValidationMessages.
func ValidationEnabled() bool { return envBool("VKAMP_VALIDATION") }

// envBool reads a yes-or-no variable; a value parseBool does not know is
// yes, as it was before Open checked them.
func envBool(name string) bool {
	on, ok := parseBool(os.Getenv(name))
	return on || !ok
}

// parseBool reads a yes-or-no variable's value; empty is no.
func parseBool(v string) (on, ok bool) {
	switch strings.ToLower(v) {
	case "", "0", "false", "no", "off":
		return false, true
	case "1", "true", "yes", "on":
		return true, true
	}
	return false, false
}

// Faults makes the device fail on purpose, for tests of what callers do
// with device failures. Each field counts from 1 (0: never): the Nth memory
// block allocation returns out-of-device-memory; the Nth submit, or the Nth
// fence wait, returns device lost (and the device stays lost, as a real
// loss leaves it). Counting starts at InjectFaults.
type Faults struct {
	AllocN, SubmitN, WaitN int

	allocs, submits, waits int
}

// hit counts one event of a kind and reports whether it is the one to fail.
// With no fault set it is one comparison.
func (f *Faults) hit(n, count *int) bool {
	if *n == 0 {
		return false
	}
	*count++
	return *count == *n
}

// CoopMat2 is a device's VK_NV_cooperative_matrix2: its features, limits and
// the granularities of its flexible dimensions for fp16 and bf16 inputs
// (fp32 accumulators).
type CoopMat2 struct {
	WorkgroupScope       bool `json:"workgroup_scope"`
	FlexibleDimensions   bool `json:"flexible_dimensions"`
	Reductions           bool `json:"reductions"`
	Conversions          bool `json:"conversions"`
	PerElementOperations bool `json:"per_element_operations"`
	TensorAddressing     bool `json:"tensor_addressing"`
	BlockLoads           bool `json:"block_loads"`
	// MaxDimension bounds a flexible dimension; WorkgroupMaxSize is the most
	// invocations of a workgroup-scope kernel, which the driver's own use of
	// ReservedSharedMemory bytes of shared memory leaves room for.
	MaxDimension         uint32                `json:"flexible_dimensions_max_dimension"`
	WorkgroupMaxSize     uint32                `json:"workgroup_scope_max_workgroup_size"`
	ReservedSharedMemory uint32                `json:"workgroup_scope_reserved_shared_memory"`
	Flexible             []CoopMat2Granularity `json:"flexible,omitempty"`
}

// CoopMat2Granularity is one flexible-dimension entry: matrices whose sides
// are multiples of M, N and K, of fp16 (or bf16) inputs, at subgroup or
// workgroup scope (workgroups of Invocations invocations).
type CoopMat2Granularity struct {
	M           uint32 `json:"m"`
	N           uint32 `json:"n"`
	K           uint32 `json:"k"`
	BF16        bool   `json:"bf16,omitempty"`
	Workgroup   bool   `json:"workgroup"`
	Invocations uint32 `json:"invocations,omitempty"`
}

// Subgroup is the subgroup-scope fp16 granularity, if the device lists one.
func (c *CoopMat2) Subgroup() (CoopMat2Granularity, bool) { return c.find(false, false) }

// Workgroup is the workgroup-scope granularity for fp16 (or bf16) inputs,
// if the device lists one.
func (c *CoopMat2) Workgroup(bf16 bool) (CoopMat2Granularity, bool) { return c.find(true, bf16) }

func (c *CoopMat2) find(workgroup, bf16 bool) (CoopMat2Granularity, bool) {
	if c != nil {
		for _, g := range c.Flexible {
			if g.Workgroup == workgroup && g.BF16 == bf16 {
				return g, true
			}
		}
	}
	return CoopMat2Granularity{}, false
}
