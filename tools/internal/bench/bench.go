// Package bench measures vkamp on a device: matmul GFLOP/s beside gonum on
// the CPU, streaming kernels' GB/s beside vkCmdCopyBuffer (copy/buffer),
// training steps (AMP beside fp32) and the host time per dispatch. tools/bench prints its results.
package bench

import (
	"context"
	"fmt"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/tools/internal/trainer"
	"github.com/vkamp/vkamp/vk"
)

// Result is one measurement.
type Result struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Detail string  `json:"detail,omitempty"`
	// Ratio compares Value with the baseline named in Versus.
	Ratio  float64 `json:"ratio,omitempty"`
	Versus string  `json:"versus,omitempty"`
	Device string  `json:"device"`
	Driver string  `json:"driver"`
	Tier   string  `json:"tier"`
}

// onDevice names d (its name, driver and tier) in every result of out.
func onDevice(d *vk.Device, out []Result) []Result {
	info := d.Info()
	for i := range out {
		out[i].Device, out[i].Driver, out[i].Tier = info.Name, info.DriverName, d.Tier().String()
	}
	return out
}

// Options choose what to run.
type Options struct {
	Sizes     []int                  // square matmul sizes
	PathSizes []int                  // square matmul sizes for each matmul path (MatmulPaths)
	Thin      []int                  // M of thin matmuls (a batch of rows times a square weight)
	ThinNK    int                    // N and K of the thin matmuls; 0 means 1024
	MinTime   time.Duration          // per measurement, at least
	Elements  int                    // for the streaming kernels (0 skips them)
	Streams   func(name string) bool // which streaming kernels to measure beside copy/buffer (nil: all)
	Data      string                 // MNIST directory, for the training steps ("" skips them)
}

// Run measures everything on d, calling emit for each result as it comes.
func Run(d *vk.Device, o Options, emit func(Result)) error {
	info := d.Info()
	stamp := func(r Result) Result {
		r.Device, r.Driver, r.Tier = info.Name, info.DriverName, d.Tier().String()
		return r
	}
	for _, n := range o.Sizes {
		cpu, err := gonumGFLOPS(n, o.MinTime)
		if err != nil {
			return err
		}
		emit(stamp(Result{Name: fmt.Sprintf("matmul/gonum-f32/%d", n), Value: cpu, Unit: "GFLOP/s", Detail: "CPU, float32"}))
		for _, dt := range []tensor.DType{tensor.Float16, tensor.Float32, tensor.BFloat16} {
			v, err := matmulGFLOPS(d, n, dt, o.MinTime)
			if err != nil {
				return err
			}
			emit(stamp(Result{Name: fmt.Sprintf("matmul/%s/%d", dt, n), Value: v, Unit: "GFLOP/s",
				Detail: dt.String() + " in and out, fp32 accumulation", Ratio: v / cpu, Versus: "gonum-f32"}))
		}
	}
	for _, n := range o.PathSizes {
		if err := MatmulPaths(d, n, o.MinTime, func(r Result) { emit(stamp(r)) }); err != nil {
			return err
		}
	}
	nk := o.ThinNK
	if nk == 0 {
		nk = 1024
	}
	for _, m := range o.Thin {
		cpu, err := gonumMNK(m, nk, nk, o.MinTime)
		if err != nil {
			return err
		}
		emit(stamp(Result{Name: fmt.Sprintf("matmul-thin/gonum-f32/%dx%d", m, nk), Value: cpu, Unit: "GFLOP/s",
			Detail: fmt.Sprintf("CPU, float32, M=%d N=K=%d", m, nk)}))
		v, err := matmulMNK(d, m, nk, nk, tensor.Float16, o.MinTime)
		if err != nil {
			return err
		}
		emit(stamp(Result{Name: fmt.Sprintf("matmul-thin/float16/%dx%d", m, nk), Value: v, Unit: "GFLOP/s",
			Detail: fmt.Sprintf("M=%d N=K=%d, float16 in and out, fp32 accumulation", m, nk), Ratio: v / cpu, Versus: "gonum-f32"}))
	}
	if o.Elements > 0 {
		if err := Stream(d, o.Elements, o.MinTime, o.Streams, emit); err != nil {
			return err
		}
	}
	if o.Data != "" {
		train, test, err := mnist.Load(o.Data)
		if err != nil {
			return err
		}
		for _, fp16 := range []bool{true, false} {
			r, err := trainSteps(d, train, test, fp16)
			if err != nil {
				return err
			}
			for _, x := range r {
				emit(stamp(x))
			}
		}
		r, err := TrainSteps(d, train, test, GPTCPU, 64, 20, 3)
		if err != nil {
			return err
		}
		for _, x := range r {
			emit(x)
		}
	}
	return nil
}

// MatmulPaths measures n^3 fp16 and bf16 products on every matmul path the
// device runs (MatMulOpts.Kind forcing each, the kernel named in the
// result), against the default rule's path in the same run:
// matmul-path/<kernel>/<dtype>/<n>.
func MatmulPaths(d *vk.Device, n int, minTime time.Duration, emit func(Result)) error {
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		x := tensor.Cast(tensor.FromFloat32(d, ref.Rand(n*n, 1), n, n), dt)
		defer x.Release()
		def, err := tensor.MatMulKernelName(x, x, tensor.MatMulOpts{Out: dt})
		if err != nil {
			return err
		}
		base, err := matmulKind(d, n, n, n, dt, "", minTime)
		if err != nil {
			return err
		}
		emit(Result{Name: fmt.Sprintf("matmul-path/default/%s/%d", dt, n), Value: base, Unit: "GFLOP/s",
			Detail: def + ", the default rule's path"})
		seen := map[string]bool{def: true}
		for _, k := range vk.MatmulKinds() {
			kernel, err := tensor.MatMulKernelName(x, x, tensor.MatMulOpts{Out: dt, Kind: k})
			if err != nil || seen[kernel] { // not on this device, or a path already measured
				continue
			}
			seen[kernel] = true
			v, err := matmulKind(d, n, n, n, dt, k, minTime)
			if err != nil {
				return fmt.Errorf("matmul kind %s: %w", k, err)
			}
			emit(Result{Name: fmt.Sprintf("matmul-path/%s/%s/%d", kernel, dt, n), Value: v, Unit: "GFLOP/s",
				Detail: "kind " + k, Ratio: v / base, Versus: "matmul-path/default"})
		}
	}
	return nil
}

func gonumGFLOPS(n int, minTime time.Duration) (float64, error) { return gonumMNK(n, n, n, minTime) }

// gonumMNK is gonum's float32 GFLOP/s for an m x k by k x n product.
func gonumMNK(m, n, k int, minTime time.Duration) (float64, error) {
	mat := func(r, c int, seed uint64) blas32.General {
		return blas32.General{Rows: r, Cols: c, Stride: c, Data: ref.Rand(r*c, seed)}
	}
	a, b, c := mat(m, k, 1), mat(k, n, 2), mat(m, n, 3)
	return rate(minTime, 2*float64(m)*float64(n)*float64(k)/1e9, func() error {
		blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, a, b, 0, c)
		return nil
	})
}

func matmulGFLOPS(d *vk.Device, n int, dt tensor.DType, minTime time.Duration) (float64, error) {
	return matmulMNK(d, n, n, n, dt, minTime)
}

// matmulMNK is the device's GFLOP/s for an m x k by k x n product in dt,
// waiting for each result.
func matmulMNK(d *vk.Device, m, n, k int, dt tensor.DType, minTime time.Duration) (float64, error) {
	return matmulKind(d, m, n, k, dt, "", minTime)
}

// matmulKind is matmulMNK on the matmul kernel kind ("" for the device's).
func matmulKind(d *vk.Device, m, n, k int, dt tensor.DType, kind string, minTime time.Duration) (float64, error) {
	a := tensor.Cast(tensor.FromFloat32(d, ref.Rand(m*k, 1), m, k), dt)
	b := tensor.Cast(tensor.FromFloat32(d, ref.Rand(k*n, 2), k, n), dt)
	defer a.Release()
	defer b.Release()
	return rate(minTime, 2*float64(m)*float64(n)*float64(k)/1e9, func() error {
		c := tensor.MatMul(a, b, tensor.MatMulOpts{Out: dt, Kind: kind})
		defer c.Release()
		if err := c.Err(); err != nil {
			return err
		}
		return d.Wait()
	})
}

type gradOnly struct{ g []*tensor.Tensor }

func (o gradOnly) Gradients() []*tensor.Tensor { return o.g }
func (o gradOnly) Step() error                 { return nil }

// rate runs f until minTime has passed (after one warm-up call) and returns
// work units per second.
func rate(minTime time.Duration, work float64, f func() error) (float64, error) {
	if err := f(); err != nil {
		return 0, err
	}
	n := 0
	start := time.Now()
	for n == 0 || time.Since(start) < minTime {
		if err := f(); err != nil {
			return 0, err
		}
		n++
	}
	return work * float64(n) / time.Since(start).Seconds(), nil
}

// trainSteps measures steps of the MNIST MLP at batch 64.
func trainSteps(d *vk.Device, train, test *mnist.Set, fp16 bool) ([]Result, error) {
	const steps = 60
	tr, err := trainer.New(trainer.Options{Device: d, Train: train.Subset(64 * steps), Test: test.Subset(64), FP16: fp16, Seed: 1})
	if err != nil {
		return nil, err
	}
	defer tr.Close()
	// The first epoch compiles the pipelines; the second is measured.
	if _, err := tr.Epoch(context.Background()); err != nil {
		return nil, err
	}
	before := d.Stats()
	start := time.Now()
	if _, err := tr.Epoch(context.Background()); err != nil {
		return nil, err
	}
	el := time.Since(start)
	after := d.Stats()
	name := "train-step/fp32"
	if fp16 {
		name = "train-step/fp16-amp"
	}
	per := func(a, b uint64) float64 { return float64(a-b) / steps }
	return []Result{
		{Name: name, Value: 64 * steps / el.Seconds(), Unit: "samples/s", Detail: "MNIST MLP 784-256-10, batch 64, Adam; epoch-end loss read and evaluation included"},
		{Name: name + "/submits", Value: per(after.Submits, before.Submits), Unit: "per step"},
		{Name: name + "/waits", Value: per(after.Waits, before.Waits), Unit: "per step", Detail: "host waits for results (epoch-end reads)"},
		{Name: name + "/stalls", Value: per(after.Stalls, before.Stalls), Unit: "per step", Detail: "host waits for a free command buffer"},
	}, nil
}
