package bench

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/tools/internal/trainer"
	"github.com/vkamp/vkamp/vk"
)

// StepOptions configure StepShare.
type StepOptions struct {
	Batch  int  // samples per step
	Steps  int  // measured steps
	Warmup int  // steps run first and not measured (pipelines, memory)
	FP32   bool // fp32 steps instead of fp16 AMP ones (StepWall)
	// Replay replays the captured step (trainer.Options.Replay, StepWall):
	// with Warmup 3 or more, every measured step is replayed.
	Replay bool
}

// StepReport is what StepShare measured, per step unless named otherwise.
type StepReport struct {
	Batch, Steps int
	Wall         time.Duration // host clock, the final device wait included
	Kernel       time.Duration // summed dispatch timestamps
	Dispatches   float64
	Copies       float64 // copies and fills: device work outside kernels
	Barriers     float64
	Submits      float64
	Waits        float64 // host waits for results inside the steps
	Stalls       float64 // host waits for a free command buffer
	// Kernels is the device time of each kernel over all measured steps,
	// longest first.
	Kernels []vk.KernelTime
}

// Share is the fraction of a step's wall time spent in kernels.
func (r StepReport) Share() float64 { return float64(r.Kernel) / float64(r.Wall) }

// StepsPerSecond is the training rate in steps.
func (r StepReport) StepsPerSecond() float64 { return 1 / r.Wall.Seconds() }

// SamplesPerSecond is the training rate in samples.
func (r StepReport) SamplesPerSecond() float64 { return float64(r.Batch) / r.Wall.Seconds() }

// errNoTimestamps says the device records no kernel times.
var errNoTimestamps = errors.New("bench: the device records no kernel times: open it with vk.Options{Timestamps: true}")

// StepShare runs o.Warmup and then o.Steps fp16 AMP (o.FP32: fp32) training steps of the
// MNIST MLP (the trainer's own step, as the demo runs it, reading no loss)
// on d, which must have been opened with timestamps. It measures the wall
// time of the measured steps, from a drained device to a drained device, and
// the kernel time the timestamps add up to in between.
//
// On a CPU device (lavapipe, SwiftShader) the queue runs one launch at a time
// and each timestamp pair brackets one, so the share is at most 1; a GPU may
// overlap dispatches with no barrier between them. On a CPU device the host's
// recording also competes with the kernels for cores, so host overhead shows
// partly as longer kernels, not only as time outside them.
func StepShare(d *vk.Device, train, test *mnist.Set, o StepOptions) (StepReport, error) {
	m, err := measureSteps(d, train, test, o)
	if err != nil {
		return StepReport{}, err
	}
	return m.report(o)
}

// StepWall runs o.Warmup and then o.Steps training steps as StepShare does
// (fp32 ones if o.FP32), on a device with or without timestamps, and
// returns the wall time of a measured step.
func StepWall(d *vk.Device, train, test *mnist.Set, o StepOptions) (time.Duration, error) {
	m, err := measureSteps(d, train, test, o)
	if err != nil {
		return 0, err
	}
	if m.t1.IsZero() {
		return 0, errors.New("bench: the measured steps did not run")
	}
	return m.t1.Sub(m.t0) / time.Duration(o.Steps), nil
}

func measureSteps(d *vk.Device, train, test *mnist.Set, o StepOptions) (*stepMeter, error) {
	if o.Batch < 1 || o.Steps < 1 || o.Warmup < 1 {
		return nil, fmt.Errorf("bench: batch %d, steps %d and warm-up %d must be positive", o.Batch, o.Steps, o.Warmup)
	}
	n := o.Warmup + o.Steps
	m := &stepMeter{}
	tr, err := trainer.New(trainer.Options{Device: d, Train: tile(train, n*o.Batch), Test: test.Subset(o.Batch),
		Batch: o.Batch, FP16: !o.FP32, Seed: 1, Replay: o.Replay,
		OnStep: func(s trainer.Step) {
			switch s.Index {
			case o.Warmup - 1:
				m.start(d)
			case n - 1:
				m.stop(d)
			}
		}})
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	if _, err := tr.Epoch(context.Background()); err != nil {
		return nil, err
	}
	return m, m.err
}

// stepMeter takes the counters, clock and kernel times at both ends of the
// measured steps. Each end first drains the device, so every kernel counted
// ran inside the window and none outside it is.
type stepMeter struct {
	err                      error
	t0, t1                   time.Time
	s0, s1, sEnd             vk.Stats
	k0, k1                   map[string]vk.KernelTime
	kernelNs0, kernelNsTotal float64
}

func (m *stepMeter) start(d *vk.Device) {
	if m.err = d.Wait(); m.err != nil {
		return
	}
	m.k0, m.kernelNs0 = kernelTimes(d)
	m.s0 = d.Stats()
	m.t0 = time.Now()
}

func (m *stepMeter) stop(d *vk.Device) {
	if m.err != nil {
		return
	}
	// Waits and stalls are counted before the final wait, which is the
	// measurement's, not the step's.
	m.s1 = d.Stats()
	if m.err = d.Wait(); m.err != nil {
		return
	}
	m.t1 = time.Now()
	m.sEnd = d.Stats()
	m.k1, m.kernelNsTotal = kernelTimes(d)
}

func (m *stepMeter) report(o StepOptions) (StepReport, error) {
	if m.t1.IsZero() {
		return StepReport{}, errors.New("bench: the measured steps did not run")
	}
	kernelNs := m.kernelNsTotal - m.kernelNs0
	if len(m.k1) == 0 || kernelNs <= 0 {
		return StepReport{}, errNoTimestamps
	}
	n := float64(o.Steps)
	per := func(after, before uint64) float64 { return float64(after-before) / n }
	r := StepReport{
		Batch:      o.Batch,
		Steps:      o.Steps,
		Wall:       time.Duration(float64(m.t1.Sub(m.t0)) / n),
		Kernel:     time.Duration(kernelNs / n),
		Dispatches: per(m.sEnd.Dispatches, m.s0.Dispatches),
		Copies:     per(m.sEnd.Copies, m.s0.Copies),
		Barriers:   per(m.sEnd.Barriers, m.s0.Barriers),
		Submits:    per(m.sEnd.Submits, m.s0.Submits),
		Waits:      per(m.s1.Waits, m.s0.Waits),
		Stalls:     per(m.s1.Stalls, m.s0.Stalls),
	}
	for name, kt := range m.k1 {
		before := m.k0[name]
		kt.Count -= before.Count
		kt.Nanoseconds -= before.Nanoseconds
		if kt.Count > 0 {
			r.Kernels = append(r.Kernels, kt)
		}
	}
	sort.Slice(r.Kernels, func(i, j int) bool { return r.Kernels[i].Nanoseconds > r.Kernels[j].Nanoseconds })
	return r, nil
}

// kernelTimes returns the device's kernel times by name and their total.
// KernelTimes accumulates from the device's start, so a window is the
// difference of two calls.
func kernelTimes(d *vk.Device) (map[string]vk.KernelTime, float64) {
	m := map[string]vk.KernelTime{}
	total := 0.0
	for _, kt := range d.KernelTimes() {
		m[kt.Name] = kt
		total += kt.Nanoseconds
	}
	return m, total
}

// tile returns n digits of s, repeating s as needed, so that one epoch
// holds all the steps to measure and no epoch-end evaluation falls inside.
func tile(s *mnist.Set, n int) *mnist.Set {
	if n <= s.N {
		return s.Subset(n)
	}
	px := s.Rows * s.Cols
	out := &mnist.Set{Images: make([]float32, 0, n*px), Labels: make([]uint8, 0, n), N: n, Rows: s.Rows, Cols: s.Cols}
	for len(out.Labels) < n {
		k := min(s.N, n-len(out.Labels))
		out.Images = append(out.Images, s.Images[:k*px]...)
		out.Labels = append(out.Labels, s.Labels[:k]...)
	}
	return out
}

// StepResults turns a report into results for tools/bench.
func StepResults(r StepReport) []Result {
	name := fmt.Sprintf("step-share/fp16-amp/%d", r.Batch)
	detail := fmt.Sprintf("MNIST MLP 784-256-10, batch %d, Adam, no loss read; %d steps, kernel time by timestamps over wall time with the final device wait",
		r.Batch, r.Steps)
	// Every kernel of 2% or more, largest first: the AMP-only ones (the
	// scaler's check, the scale update) beside the optimizer's step.
	var top []string
	for _, kt := range r.Kernels {
		if share := kt.Nanoseconds / float64(r.Steps) / float64(r.Kernel); share >= 0.02 {
			top = append(top, fmt.Sprintf("%s %.0f%%", kt.Name, 100*share))
		}
	}
	ms := func(t time.Duration) float64 { return float64(t) / 1e6 }
	return []Result{
		{Name: name, Value: 100 * r.Share(), Unit: "% in kernels", Detail: detail},
		{Name: name + "/wall", Value: ms(r.Wall), Unit: "ms per step"},
		{Name: name + "/kernels", Value: ms(r.Kernel), Unit: "ms per step", Detail: "kernels of 2% or more: " + strings.Join(top, ", ")},
		{Name: name + "/host", Value: ms(r.Wall - r.Kernel), Unit: "ms per step", Detail: "wall time outside kernels"},
		{Name: name + "/rate", Value: r.StepsPerSecond(), Unit: "steps/s"},
		{Name: name + "/samples", Value: r.SamplesPerSecond(), Unit: "samples/s"},
		{Name: name + "/dispatches", Value: r.Dispatches, Unit: "per step"},
		{Name: name + "/copies", Value: r.Copies, Unit: "per step", Detail: "copies and fills, not timed as kernels"},
		{Name: name + "/barriers", Value: r.Barriers, Unit: "per step"},
		{Name: name + "/submits", Value: r.Submits, Unit: "per step"},
		{Name: name + "/waits", Value: r.Waits, Unit: "per step", Detail: "host waits for results, the measurement's final wait excluded"},
		{Name: name + "/stalls", Value: r.Stalls, Unit: "per step", Detail: "host waits for a free command buffer"},
	}
}
