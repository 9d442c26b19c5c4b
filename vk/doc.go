// Package vk is vkamp's Vulkan runtime: the one package that talks to
// Vulkan (through cgo and github.com/vulkan-go/vulkan), so that callers see
// devices, buffers and kernels, never a Vulkan handle.
//
// Open chooses a device (VKAMP_DEVICE, or the best by type) and its tier of
// kernel variants (VKAMP_TIER forces a lower one). It checks every VKAMP_*
// variable first: an unknown name, or a value the variable or the device
// cannot take, is an ErrEnvironment error rather than a later failure.
// Buffers are cut from a few large memory blocks, counted against each memory
// heap's size (and VK_EXT_memory_budget where offered): a block past it is
// refused with ErrOutOfDeviceMemory before the driver is asked, as software
// drivers hand out host memory far past the heap they report (Device.Memory
// gives the figures). Memory the host can map is written and read directly,
// other memory through one staging ring. Kernels are built from SPIR-V with
// specialization constants and cached, with the pipeline cache kept on disk.
//
// Work is recorded and submitted in batches. Dispatch, Copy and Fill return
// at once; the runtime tracks the byte ranges each command reads and writes
// and records a barrier only where a later command depends on an earlier
// one. Reading a buffer, Wait and Close wait for the device; Sync submits
// without waiting. A failure of submitted work is returned by the next call
// that waits, and a lost device makes every later call fail with
// ErrDeviceLost. Errors wrap sentinel values (ErrOutOfDeviceMemory,
// ErrDeviceLost, ErrClosed, ...) that errors.Is matches.
//
// BeginCapture and EndCapture capture the commands recorded between them
// into a Graph, as CUDA graphs do, without running them; Graph.Replay runs
// them again with one command, on the same buffers. Host reads and writes
// are refused while capturing, and Replay of a graph whose buffers were freed
// returns ErrStaleGraph (capture.go says what else a graph keeps).
// BeginTrace and EndTrace describe the commands issued between them without
// recording them (trace.go): Trace.Same tells whether a step issued exactly
// the work of an earlier one, so a graph is replayed only for a step that
// would record what it holds; a trace is then recorded, captured or dropped.
//
// A Device and its Buffers are safe for concurrent use: one lock orders
// recording and submission. Close waits for the device and destroys every
// object it made; it is idempotent, and a closed device returns ErrClosed.
//
// VKAMP_DETERMINISTIC=1 (Options.Deterministic) opens the device in
// deterministic mode: kernels that declare the specialization constant
// DETERMINISTIC run arithmetic whose bits vkamp fixes, the same on every
// driver and tier (package tensor says which).
//
// VKAMP_VALIDATION=1 enables the Khronos validation layer with
// synchronization validation; ValidationMessages returns what it reported.
// Without cgo the package builds and Open returns an error saying why.
package vk
