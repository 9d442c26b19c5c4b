package bench

import (
	"fmt"
	"time"

	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Deterministic measures the cost of the deterministic mode: an n x n x n
// matmul (fp16 and fp32) and MNIST MLP training steps (fp16 AMP) on a
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
