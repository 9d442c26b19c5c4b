package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/tools/internal/trainer"
	"github.com/vkamp/vkamp/vk"
)

// HostReport is what HostPerDispatch measured: the fastest sample.
type HostReport struct {
	Host       time.Duration // host time recording one step
	Dispatches uint64        // kernel launches the step recorded
	Copies     uint64        // copies and fills it recorded
	Samples    int           // steps measured
	Discarded  int           // of those, steps that waited for the device and so were not counted
	Allocs     uint64        // Go heap allocations of the kept step
}

// PerDispatch is the host time of a step over its dispatches.
func (r HostReport) PerDispatch() time.Duration {
	return r.Host / time.Duration(max(r.Dispatches, 1))
}

// hostSample is one step's recording: its host time and what it recorded.
type hostSample struct {
	host                     time.Duration
	dispatches, copies, held uint64 // held: waits and stalls during the step
	allocs                   uint64 // Go heap allocations during the step
}

// fastestHost keeps the fastest sample per dispatch among those that did not
// wait for the device.
func fastestHost(samples []hostSample) (HostReport, error) {
	r := HostReport{Samples: len(samples)}
	for _, s := range samples {
		if s.held > 0 || s.dispatches == 0 {
			r.Discarded++
			continue
		}
		if r.Dispatches == 0 || s.host*time.Duration(r.Dispatches) < r.Host*time.Duration(s.dispatches) {
			r.Host, r.Dispatches, r.Copies, r.Allocs = s.host, s.dispatches, s.copies, s.allocs
		}
	}
	if r.Dispatches == 0 {
		return r, fmt.Errorf("bench: host time: each of %d steps waited for the device or dispatched nothing", len(samples))
	}
	return r, nil
}

// HostPerDispatch measures the host time of recording a training step (fp16
// AMP unless o.FP32, as StepShare runs it): after o.Warmup steps, every
// other step starts on a drained device and the next one is timed, from the
// end of one step to the end of the next, o.Steps times; the fastest step
// per dispatch is kept. A timed step that waited for the device (a read or
// a full command ring) is discarded, so the time is recording alone.
func HostPerDispatch(d *vk.Device, train, test *mnist.Set, o StepOptions) (HostReport, error) {
	if o.Batch < 1 || o.Steps < 1 || o.Warmup < 1 {
		return HostReport{}, fmt.Errorf("bench: batch %d, steps %d and warm-up %d must be positive", o.Batch, o.Steps, o.Warmup)
	}
	n := o.Warmup + 2*o.Steps
	var (
		samples []hostSample
		ms      runtime.MemStats
		m0      uint64
		t0      time.Time
		s0      vk.Stats
		err     error
	)
	tr, err := trainer.New(trainer.Options{Device: d, Train: tile(train, n*o.Batch), Test: test.Subset(o.Batch),
		Batch: o.Batch, FP16: !o.FP32, Seed: 1,
		OnStep: func(s trainer.Step) {
			j := s.Index - (o.Warmup - 1)
			if j < 0 || err != nil || j >= 2*o.Steps {
				return
			}
			if j%2 == 0 {
				err = d.Wait()
				runtime.ReadMemStats(&ms)
				m0, s0, t0 = ms.Mallocs, d.Stats(), time.Now()
				return
			}
			host := time.Since(t0)
			s1 := d.Stats()
			runtime.ReadMemStats(&ms)
			samples = append(samples, hostSample{host: host, dispatches: s1.Dispatches - s0.Dispatches,
				copies: s1.Copies - s0.Copies, held: s1.Waits - s0.Waits + s1.Stalls - s0.Stalls, allocs: ms.Mallocs - m0})
		}})
	if err != nil {
		return HostReport{}, err
	}
	defer tr.Close()
	if _, e := tr.Epoch(context.Background()); e != nil {
		return HostReport{}, e
	}
	if err != nil {
		return HostReport{}, err
	}
	if len(samples) == 0 {
		return HostReport{}, errors.New("bench: the measured steps did not run")
	}
	return fastestHost(samples)
}

// TrainSteps measures, on d, the wall time of fp16 AMP and fp32 training
// steps of the MNIST MLP at batch, and of the AMP step replayed from a
// captured graph (StepWall, rounds times each, taking turns, keeping the
// fastest of each) and the host time per dispatch of an AMP step
// (HostPerDispatch), and then Host's results, with the GPT of size z.
func TrainSteps(d *vk.Device, train, test *mnist.Set, z GPTSize, batch, steps, rounds int) ([]Result, error) {
	var best [3]time.Duration // AMP, fp32, AMP replayed
	for r := 0; r < rounds; r++ {
		for i := range best {
			w, err := StepWall(d, train, test, StepOptions{Batch: batch, Steps: steps, Warmup: 3, FP32: i == 1, Replay: i == 2})
			if err != nil {
				return nil, err
			}
			if r == 0 || w < best[i] {
				best[i] = w
			}
		}
	}
	ms := func(t time.Duration) float64 { return float64(t) / 1e6 }
	out := []Result{
		{Name: fmt.Sprintf("train-step/amp/%d", batch), Value: ms(best[0]), Unit: "ms per step",
			Detail: fmt.Sprintf("MNIST MLP 784-256-10, fp16 AMP, Adam, no loss read; fastest of %d runs of %d steps", rounds, steps)},
		{Name: fmt.Sprintf("train-step/fp32/%d", batch), Value: ms(best[1]), Unit: "ms per step",
			Detail: fmt.Sprintf("MNIST MLP 784-256-10, fp32, Adam, no loss read; fastest of %d runs of %d steps", rounds, steps)},
		{Name: "train-step/amp-vs-fp32", Value: float64(best[1]) / float64(best[0]), Unit: "x",
			Detail: fmt.Sprintf("fp32 step time over AMP step time, batch %d, measured in turns (above 1: AMP faster)", batch)},
		{Name: fmt.Sprintf("train-step/amp-replay/%d", batch), Value: ms(best[2]), Unit: "ms per step",
			Detail: fmt.Sprintf("the AMP step captured once and replayed (trainer.Options.Replay); fastest of %d runs of %d steps", rounds, steps)},
		{Name: "train-step/amp-replay-vs-amp", Value: float64(best[0]) / float64(best[2]), Unit: "x",
			Detail: fmt.Sprintf("recorded AMP step time over replayed AMP step time, batch %d, measured in turns (above 1: replay faster)", batch)},
	}
	out = onDevice(d, out)
	h, err := Host(d, train, test, z, batch, steps)
	return append(out, h...), err
}

// Host measures the host time per dispatch of an AMP training step at
// batch (HostPerDispatch over steps samples): dispatch/host-us, and of the
// same step replayed from a captured graph (Replay): dispatch/replay-us,
// and of the step of a GPT of size z (ReplayGPTResults; tools/bench
// measures GPTCPU, a test a smaller one): dispatch/replay-us/gpt, and its
// recorded step's dispatch/host-us/gpt;
// and beside them the driver's floor, vk's own launch and a launch run
// (Driver): dispatch/driver-us, dispatch/driver-switch-us (a step's
// sequence of kernels, each bound, a barrier before each), dispatch/vk-us,
// dispatch/run-us.
func Host(d *vk.Device, train, test *mnist.Set, z GPTSize, batch, steps int) ([]Result, error) {
	h, err := HostPerDispatch(d, train, test, StepOptions{Batch: batch, Steps: steps, Warmup: 3})
	if err != nil {
		return nil, err
	}
	ms := func(t time.Duration) float64 { return float64(t) / 1e6 }
	out := []Result{
		{Name: "dispatch/host-us", Value: float64(h.PerDispatch()) / 1e3, Unit: "us per dispatch",
			Detail: fmt.Sprintf("host time recording an AMP step (batch %d) on a drained device, %.3g ms, over its %d dispatches (and %d copies), %.3g Go allocations per dispatch; fastest of %d steps, %d discarded for waiting",
				batch, ms(h.Host), h.Dispatches, h.Copies, float64(h.Allocs)/float64(h.Dispatches), h.Samples, h.Discarded)},
	}
	out = onDevice(d, out)
	rs, err := Replay(d, train, batch, steps)
	if err != nil {
		return append(out, rs...), err
	}
	gs, err := ReplayGPTResults(d, z, steps)
	rs = append(rs, gs...)
	if err != nil {
		return append(out, rs...), err
	}
	ds, err := Driver(d, 1000, 20)
	if err == nil && len(ds) > 0 && ds[0].Value > 0 {
		// vkamp's share of a step's launch: the host time over the driver's floor.
		out[0].Ratio, out[0].Versus = out[0].Value/ds[0].Value, "driver-us"
	}
	return append(append(out, rs...), ds...), err
}
