package bench

import (
	"fmt"
	"time"

	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Deterministic measures the cost of the deterministic mode: an n x n x n
// matmul (fp16 and fp32), GELU and its backward pass, a layer norm, and
// MNIST MLP training steps (fp16 AMP) on a
// device opened in the default mode and on one opened with
// vk.Options.Deterministic, in one run, each deterministic result with its
// ratio to the default one. An empty data skips the training steps.
func Deterministic(device string, n int, data string, minTime time.Duration, emit func(Result)) error {
	fast, err := vk.Open(vk.Options{Device: device})
	if err != nil {
		return err
	}
	defer fast.Close()
	det, err := vk.Open(vk.Options{Device: device, Deterministic: true})
	if err != nil {
		return err
	}
	defer det.Close()
	info := det.Info()
	out := func(r Result) {
		r.Device, r.Driver, r.Tier = info.Name, info.DriverName, det.Tier().String()
		emit(r)
	}
	for _, dt := range []tensor.DType{tensor.Float16, tensor.Float32} {
		var v [2]float64
		for i, d := range []*vk.Device{fast, det} {
			if v[i], err = matmulGFLOPS(d, n, dt, minTime); err != nil {
				return err
			}
		}
		name := fmt.Sprintf("deterministic/matmul/%d/%s", n, dt)
		out(Result{Name: name + "/default", Value: v[0], Unit: "GFLOP/s"})
		out(Result{Name: name, Value: v[1], Unit: "GFLOP/s", Ratio: v[1] / v[0], Versus: name + "/default",
			Detail: "VKAMP_DETERMINISTIC=1: matmul_reg, no contraction"})
	}
	if err := detKernels(fast, det, minTime, out); err != nil {
		return err
	}
	if data == "" {
		return nil
	}
	train, test, err := mnist.Load(data)
	if err != nil {
		return err
	}
	var v [2]float64
	for i, d := range []*vk.Device{fast, det} {
		rs, err := trainSteps(d, train, test, true)
		if err != nil {
			return err
		}
		v[i] = rs[0].Value
	}
	name := "deterministic/train-step/fp16-amp"
	out(Result{Name: name + "/default", Value: v[0], Unit: "samples/s"})
	out(Result{Name: name, Value: v[1], Unit: "samples/s", Ratio: v[1] / v[0], Versus: name + "/default",
		Detail: "MNIST MLP 784-256-10, batch 64, Adam, VKAMP_DETERMINISTIC=1"})
	return nil
}

// detKernels measures GELU, its backward pass (1M fp32 elements) and a
// layer norm (1024 rows of 768) on fast and on det, the two timed
// alternately, each det rate with its ratio to the default one.
func detKernels(fast, det *vk.Device, minTime time.Duration, out func(Result)) error {
	const n, rows, cols = 1 << 20, 1024, 768
	type inputs struct{ x, dy, lx, g, b *tensor.Tensor }
	var in [2]inputs
	for i, d := range []*vk.Device{fast, det} {
		in[i] = inputs{
			x:  tensor.FromFloat32(d, ref.Rand(n, 1), n),
			dy: tensor.FromFloat32(d, ref.Rand(n, 2), n),
			lx: tensor.FromFloat32(d, ref.Rand(rows*cols, 3), rows, cols),
			g:  tensor.FromFloat32(d, ref.Rand(cols, 4), cols),
			b:  tensor.FromFloat32(d, ref.Rand(cols, 5), cols),
		}
		defer in[i].x.Release()
		defer in[i].dy.Release()
		defer in[i].lx.Release()
		defer in[i].g.Release()
		defer in[i].b.Release()
	}
	// wait releases the results once the device has made them.
	wait := func(d *vk.Device, ts ...*tensor.Tensor) error {
		for _, t := range ts {
			defer t.Release()
			if err := t.Err(); err != nil {
				return err
			}
		}
		return d.Wait()
	}
	for _, k := range []struct {
		name string
		work float64 // million elements
		f    func(d *vk.Device, in inputs) error
	}{
		{"gelu", n / 1e6, func(d *vk.Device, in inputs) error { return wait(d, tensor.GELU(in.x, tensor.Float32)) }},
		{"gelu-backward", n / 1e6, func(d *vk.Device, in inputs) error {
			return wait(d, tensor.GELUBackward(in.dy, in.x, tensor.Float32))
		}},
		{"layer-norm", rows * cols / 1e6, func(d *vk.Device, in inputs) error {
			y, st := tensor.LayerNorm(in.lx, in.g, in.b, 1e-5)
			return wait(d, y, st)
		}},
	} {
		vf, vd, err := bestRates(minTime, k.work,
			func() error { return k.f(fast, in[0]) }, func() error { return k.f(det, in[1]) })
		if err != nil {
			return err
		}
		name := "deterministic/" + k.name + "/fp32"
		out(Result{Name: name + "/default", Value: vf, Unit: "Melem/s"})
		out(Result{Name: name, Value: vd, Unit: "Melem/s", Ratio: vd / vf, Versus: name + "/default",
			Detail: "VKAMP_DETERMINISTIC=1: det.glsl's erf/exp/division, fixed trees"})
	}
	return nil
}
