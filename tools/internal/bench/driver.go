package bench

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/vkamp/vkamp/shaders"
	"github.com/vkamp/vkamp/vk"
)

// DriverNames are the results of Driver.
var DriverNames = []string{"dispatch/driver-us", "dispatch/driver-switch-us", "dispatch/vk-us", "dispatch/run-us"}

// Driver measures what a launch costs the host below the tensor layer, to set
// dispatch/host-us beside: the driver's floor (vk.Device.RecordingFloor: n
// launches of a tiny kernel recorded straight through Vulkan in one call)
// and the same launches through vk.Device.Dispatch (checks, hazard tracking,
// one cgo call each), a chain through four buffers in which each launch
// reads what the one before wrote, so each needs a barrier; and that chain
// run, from a drained device to a drained device: what a launch costs
// whatever its work, which on lavapipe is mostly waking its worker threads
// and waiting for them. Each is the fastest of rounds, per launch.
func Driver(d *vk.Device, n, rounds int) ([]Result, error) {
	if n < 1 || rounds < 1 {
		return nil, fmt.Errorf("bench: driver: count %d and rounds %d must be positive", n, rounds)
	}
	k, err := copyKernel(d, "copy32")
	if err != nil {
		return nil, err
	}
	k16, err := copyKernel(d, "copy16")
	if err != nil {
		return nil, err
	}
	const words = 64
	var bufs [4]*vk.Buffer
	for i := range bufs {
		if bufs[i], err = d.Alloc(4 * words); err != nil {
			return nil, err
		}
		defer bufs[i].Free()
	}
	push := binary.LittleEndian.AppendUint32(nil, words)
	grid := [3]uint32{1, 1, 1}
	floor, err := d.RecordingFloor(k, n, rounds, grid, push, bufs[0], bufs[1])
	if err != nil {
		return nil, err
	}
	switching, err := d.RecordingFloorSwitching(k, k16, n, rounds, grid, push, bufs[0], bufs[1])
	if err != nil {
		return nil, err
	}
	// Launches go in runs of chunk with the device drained between runs,
	// outside the time, so that no run fills a batch: a submission, or a
	// wait for a free command buffer, is not recording (nor in host-us).
	const chunk = 100
	var best time.Duration
	for r := range rounds {
		var t time.Duration
		for i := 0; i < n; i++ {
			if i%chunk == 0 {
				if err := d.Wait(); err != nil {
					return nil, err
				}
			}
			t0 := time.Now()
			err := d.Dispatch(k, grid, push, bufs[i%4], bufs[(i+1)%4])
			t += time.Since(t0)
			if err != nil {
				return nil, err
			}
		}
		if r == 0 || t < best {
			best = t
		}
	}
	if err := d.Wait(); err != nil {
		return nil, err
	}
	perVK := best / time.Duration(n)
	var run time.Duration
	for r := range max(rounds/4, 1) { // a round is n launches run: ~35 ms on lavapipe
		t0 := time.Now()
		for i := 0; i < n; i++ {
			if err := d.Dispatch(k, grid, push, bufs[i%4], bufs[(i+1)%4]); err != nil {
				return nil, err
			}
		}
		if err := d.Wait(); err != nil {
			return nil, err
		}
		if t := time.Since(t0); r == 0 || t < run {
			run = t
		}
	}
	perRun := run / time.Duration(n)
	us := func(t time.Duration) float64 { return float64(t) / 1e3 }
	out := []Result{
		{Name: "dispatch/driver-us", Value: us(floor), Unit: "us per dispatch",
			Detail: fmt.Sprintf("the driver's floor: %d launches of a one-workgroup copy recorded straight through Vulkan in one call (pipeline bound once; per launch descriptors pushed or written, push constants, dispatch), not submitted; fastest of %d", n, rounds)},
		{Name: "dispatch/driver-switch-us", Value: us(switching), Unit: "us per dispatch", Ratio: float64(switching) / float64(max(floor, 1)), Versus: "driver-us",
			Detail: fmt.Sprintf("the driver's floor for a step's sequence: the same %d launches alternating between two kernels (copy32, copy16), each pipeline bound before its launch, a barrier before each; fastest of %d", n, rounds)},
		{Name: "dispatch/vk-us", Value: us(perVK), Unit: "us per dispatch", Ratio: float64(perVK) / float64(max(floor, 1)), Versus: "driver-us",
			Detail: fmt.Sprintf("the same %d launches through vk.Device.Dispatch (checks, hazard tracking, a barrier each), a chain through 4 buffers, drained every 100 outside the time; fastest of %d", n, rounds)},
		{Name: "dispatch/run-us", Value: us(perRun), Unit: "us per dispatch", Ratio: float64(perRun) / float64(max(perVK, 1)), Versus: "vk-us",
			Detail: fmt.Sprintf("that chain of %d launches recorded, submitted and run, from a drained device to a drained device: a launch's cost to a step whatever its work; fastest of %d", n, max(rounds/4, 1))},
	}
	out = onDevice(d, out)
	return out, nil
}

// copyKernel makes the bench's pipeline of copy kernel op (copy32 or
// copy16, which take the same bindings and push constants).
func copyKernel(d *vk.Device, op string) (*vk.Kernel, error) {
	src, ok := shaders.Lookup(op, d.Tier())
	if !ok {
		return nil, fmt.Errorf("bench: driver: no %s kernel for this tier", op)
	}
	return d.KernelFor("bench "+op, func() (vk.KernelSource, error) {
		s := vk.KernelSource{Name: op, SPIRV: src.Code(), PushSize: src.PushSize, Bindings: src.Bindings}
		if src.SpecLocalSizeX {
			info := d.Info()
			s.Spec = map[uint32]uint32{0: min(64, info.MaxWorkgroupInvocations, info.MaxWorkgroupSize[0])}
		}
		return s, nil
	})
}
