package bench

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// streamCols is the last axis of the row kernels' input (reductions,
// softmax, layer norm): a row of a transformer's hidden size.
const streamCols = 1024

// StreamNames are the names of Stream's results, in order (tools/bench's
// -run chooses by them).
var StreamNames = []string{"copy/buffer", "stream/copy-f32", "stream/cast-f32-f16", "stream/cast-f16-f32", "stream/add-f32", "stream/add-f16",
	"stream/sum-rows-f32", "stream/softmax-f32", "stream/layernorm-f32", "stream/adam-f32", "stream/adam-half-f32", "stream/adam-unscaling-f32", "stream/sgd-f32", "stream/adadelta-f32",
	"stream/unscale-f32", "stream/check-f32",
	"stream/gelu-f16", "stream/gelu-backward-f16", "stream/accumulate-f32", "stream/maxpool-f16", "stream/maxpool-backward-f16", "stream/dropout-f16", "stream/sum-cols-f16"}

// streamOp is one streaming kernel to measure: run records it once and
// waits; bytes is what it reads plus what it writes.
type streamOp struct {
	name, detail string
	bytes        float64
	run          func() error
}

// Stream measures vkCmdCopyBuffer between two Float32 device buffers of n
// elements (copy/buffer) and each streaming kernel on n elements, in GB/s of
// bytes read plus bytes written, each beside copy/buffer: all are run in
// turn, round after round, for at least 2*minTime and three rounds, and each
// keeps its fastest call, so that the noise of a shared machine hits all
// alike. want chooses the kernels by name (nil: all); copy/buffer, their
// baseline, is always measured. n is rounded up to a multiple of the row
// length (1024).
func Stream(d *vk.Device, n int, minTime time.Duration, want func(name string) bool, emit func(Result)) error {
	if n < 1 {
		return fmt.Errorf("bench: stream: %d elements", n)
	}
	ops, n, done, err := streamOps(d, n, want)
	defer done()
	if err != nil {
		return err
	}
	runs := make([]func() error, len(ops))
	for i, o := range ops {
		runs[i] = o.run
	}
	best, err := fastest(minTime, runs)
	if err != nil {
		return fmt.Errorf("bench: stream: %w", err)
	}
	info := d.Info()
	results := streamResults(ops, best, n)
	for _, r := range results {
		r.Device, r.Driver, r.Tier = info.Name, info.DriverName, d.Tier().String()
		emit(r)
	}
	return nil
}

// StreamForms measures each streaming kernel that want chooses (nil: all)
// on d in the forms its forms table picks and on plain, the same device
// opened with vk.Options.PlainForms, in turn, round after round as Stream
// does: forms/<kernel> is d's GB/s beside plain's. A ratio under 1 is a
// texel form slower than the plain one on this driver.
func StreamForms(d, plain *vk.Device, n int, minTime time.Duration, want func(name string) bool, emit func(Result)) error {
	if n < 1 || !plain.PlainForms() {
		return fmt.Errorf("bench: stream forms: %d elements, plain forms %v", n, plain.PlainForms())
	}
	ops, n, done, err := streamOps(d, n, want)
	defer done()
	if err != nil {
		return err
	}
	pops, _, pdone, err := streamOps(plain, n, want)
	defer pdone()
	if err != nil {
		return err
	}
	ops, pops = ops[1:], pops[1:] // not copy/buffer: it has no forms
	var runs []func() error
	for i := range ops {
		runs = append(runs, ops[i].run, pops[i].run)
	}
	best, err := fastest(minTime, runs)
	if err != nil {
		return fmt.Errorf("bench: stream forms: %w", err)
	}
	info := d.Info()
	for i, o := range ops {
		v, pv := o.bytes/1e9/best[2*i].Seconds(), o.bytes/1e9/best[2*i+1].Seconds()
		emit(Result{Name: "forms/" + strings.TrimPrefix(o.name, "stream/"), Value: v, Unit: "GB/s", Ratio: v / pv, Versus: "plain forms",
			Detail: fmt.Sprintf("%s: the device's forms beside the plain ones (vk.Options.PlainForms), %.3g GB/s; %d elements", o.detail, pv, n),
			Device: info.Name, Driver: info.DriverName, Tier: d.Tier().String()})
	}
	return nil
}

// streamOps makes Stream's kernels on d over n elements (rounded up to
// whole rows, the n it returns), copy/buffer first; done releases what
// they use.
func streamOps(d *vk.Device, n int, want func(name string) bool) (_ []streamOp, _ int, done func(), err error) {
	rows := (n + streamCols - 1) / streamCols
	n = rows * streamCols
	var keep []*tensor.Tensor
	var closers []func()
	done = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
		for _, t := range keep {
			t.Release()
		}
	}
	f32 := func(seed uint64, shape ...int) *tensor.Tensor {
		t := tensor.FromFloat32(d, ref.Rand(shapeLen(shape), seed), shape...)
		keep = append(keep, t)
		return t
	}
	src, dst := f32(1, n), f32(2, n)
	a, b := f32(3, rows, streamCols), f32(4, rows, streamCols)
	h, h2 := tensor.Cast(a, tensor.Float16), tensor.Cast(b, tensor.Float16)
	keep = append(keep, h, h2)
	gamma, beta := f32(5, streamCols), f32(6, streamCols)
	p, g, ug := f32(7, n), f32(8, n), f32(9, n)
	// Max pooling, 2x2, over planes of 32x32 (rows of 1024 make them; the
	// MNIST example's are 24x24): its input, an upstream gradient and the
	// argmax that goes with them.
	pool := [2]int{2, 2}
	hp := tensor.Reshape(h, rows, 32, 32)
	dyp := tensor.Cast(f32(10, rows, 16, 16), tensor.Float16)
	yp, argp := tensor.MaxPool2d(hp, pool, [2]int{}, [2]int{})
	keep = append(keep, hp, dyp, yp, argp)
	for _, t := range keep {
		if err := t.Err(); err != nil {
			return nil, 0, done, fmt.Errorf("bench: stream: %w", err)
		}
	}
	// The optimizers' states over p and g: adamHalf is AMP's Adam (it also
	// writes each weight's fp16 copy); the MNIST CNN recipe steps Adadelta.
	var states [4]*tensor.OptimizerState
	closers = append(closers, func() {
		for _, s := range states {
			s.Close()
		}
	})
	for i, moments := range []int{2, 2, 1, 2} {
		var err error
		if states[i], err = tensor.NewOptimizerState([]*tensor.Tensor{p}, []*tensor.Tensor{g}, moments); err != nil {
			return nil, 0, done, err
		}
	}
	adam, adamHalf, sgd, adadelta := states[0], states[1], states[2], states[3]
	hw := tensor.Zeros(d, tensor.Float16, n)
	keep = append(keep, hw)
	if err := hw.Err(); err != nil {
		return nil, 0, done, fmt.Errorf("bench: stream: %w", err)
	}
	adamHalf.SetHalfCopy(0, hw)
	// Scale 1: every round multiplies the same gradients by 1, so they stay
	// what they were (by 1/4 they would turn subnormal, then zero, within
	// a hundred rounds, and the rounds would measure other values).
	sc, err := scaler.New(scaler.Options{InitScale: 1})
	if err != nil {
		return nil, 0, done, err
	}
	closers = append(closers, func() { sc.Close() })
	one := tensor.Full(d, tensor.Float32, 1, 1)
	keep = append(keep, one)
	sc.Scale(one).Release()
	unscaleOpt := &gradOnly{[]*tensor.Tensor{ug}}
	// The fused path's halves, by a scale of 4: the check and a fused
	// Adam read the gradients and write none.
	ls := tensor.NewLossScale(4, 0)
	closers = append(closers, func() { ls.Close() })
	ls.Scale(one).Release()
	var checkTab tensor.BlockTable
	closers = append(closers, func() { checkTab.Close() })
	found := tensor.Zeros(d, tensor.Float32, 1)
	keep = append(keep, found)
	if err := found.Err(); err != nil {
		return nil, 0, done, fmt.Errorf("bench: stream: %w", err)
	}

	adamStep := func(s *tensor.OptimizerState, unscale *tensor.LossScale) error {
		if err := s.AdamStep(tensor.AdamConfig{LR: 1e-6, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Unscale: unscale}, nil); err != nil {
			return err
		}
		return d.Wait()
	}
	wait := func(outs ...*tensor.Tensor) error {
		for _, o := range outs {
			defer o.Release()
		}
		for _, o := range outs {
			if err := o.Err(); err != nil {
				return err
			}
		}
		return d.Wait()
	}
	fn := float64(n)
	ops := []streamOp{
		{"copy/buffer", "vkCmdCopyBuffer, fp32", 8 * fn, func() error {
			if err := dst.CopyFrom(src); err != nil {
				return err
			}
			return d.Wait()
		}},
		{"stream/copy-f32", "Cast to its own dtype (the driver's buffer copy)", 8 * fn, func() error { return wait(tensor.Cast(a, tensor.Float32)) }},
		{"stream/cast-f32-f16", "Cast fp32 to fp16", 6 * fn, func() error { return wait(tensor.Cast(a, tensor.Float16)) }},
		{"stream/cast-f16-f32", "Cast fp16 to fp32", 6 * fn, func() error { return wait(tensor.Cast(h, tensor.Float32)) }},
		{"stream/add-f32", "Add, fp32", 12 * fn, func() error { return wait(tensor.Add(a, b, tensor.Float32)) }},
		{"stream/add-f16", "Add, fp16 in and out (as under autocast)", 6 * fn, func() error { return wait(tensor.Add(h, h2, tensor.Float16)) }},
		{"stream/sum-rows-f32", fmt.Sprintf("SumAxis over the last axis of [%d, %d], fp32", rows, streamCols),
			4*fn + 4*float64(rows), func() error { return wait(tensor.SumAxis(a, 1)) }},
		{"stream/softmax-f32", fmt.Sprintf("Softmax over rows of %d, fp32", streamCols), 8 * fn,
			func() error { return wait(tensor.Softmax(a)) }},
		{"stream/layernorm-f32", fmt.Sprintf("LayerNorm over rows of %d, fp32", streamCols), 8*fn + 8*float64(rows),
			func() error { return wait(tensor.LayerNorm(a, gamma, beta, 1e-5)) }},
		{"stream/adam-f32", "Adam step in place: reads value, gradient, two moments; writes value, two moments", 28 * fn,
			func() error { return adamStep(adam, nil) }},
		{"stream/adam-half-f32", "Adam step in place writing an fp16 copy of each weight (AMP's Adam): stream/adam-f32's bytes and the copy", 30 * fn,
			func() error { return adamStep(adamHalf, nil) }},
		{"stream/adam-unscaling-f32", "stream/adam-f32 unscaling each gradient as it reads it (a fused Adam under a scaler: AdamConfig.Unscale)", 28 * fn,
			func() error { return adamStep(adam, ls) }},
		{"stream/sgd-f32", "SGD step with momentum in place: reads value, gradient, momentum buffer; writes value, buffer", 20 * fn,
			func() error {
				if err := sgd.SGDStep(tensor.SGDConfig{LR: 1e-6, Momentum: 0.9}, nil); err != nil {
					return err
				}
				return d.Wait()
			}},
		{"stream/adadelta-f32", "Adadelta step in place: reads value, gradient, two accumulators; writes value, two accumulators", 28 * fn,
			func() error {
				if err := adadelta.AdadeltaStep(tensor.AdadeltaConfig{LR: 1e-6, Rho: 0.9, Eps: 1e-6}, nil); err != nil {
					return err
				}
				return d.Wait()
			}},
		{"stream/unscale-f32", "scaler's fused inf check and unscale, in place (and the scale's update)", 8 * fn,
			func() error {
				if err := sc.Unscale(unscaleOpt); err != nil {
					return err
				}
				if err := sc.UpdateTo(1); err != nil {
					return err
				}
				return d.Wait()
			}},
		{"stream/check-f32", "scaler's inf check alone, for a fused Adam that unscales as it steps (LossScale.Check): reads the gradients", 4 * fn,
			func() error {
				if err := ls.Check([]*tensor.Tensor{ug}, found, &checkTab); err != nil {
					return err
				}
				return d.Wait()
			}},
		{"stream/gelu-f16", "GELU, fp16 in and out (as under autocast)", 4 * fn, func() error { return wait(tensor.GELU(h, tensor.Float16)) }},
		{"stream/gelu-backward-f16", "GELU's backward, fp16 gradient and input in, fp16 out", 6 * fn,
			func() error { return wait(tensor.GELUBackward(h2, h, tensor.Float16)) }},
		{"stream/accumulate-f32", "Accumulate, fp32 into fp32 in place (autograd's gradient sums)", 12 * fn,
			func() error {
				if err := tensor.Accumulate(dst, src); err != nil {
					return err
				}
				return d.Wait()
			}},
		{"stream/maxpool-f16", "MaxPool2d(2) over planes of 32x32, fp16 in and out, and its int32 argmax", 3.5 * fn,
			func() error { return wait(tensor.MaxPool2d(hp, pool, [2]int{}, [2]int{})) }},
		{"stream/maxpool-backward-f16", "MaxPool2dBackward of it: reads the fp16 gradient and the argmax, writes the fp16 input gradient", 3.5 * fn,
			func() error { return wait(tensor.MaxPool2dBackward(dyp, argp, hp.Shape(), pool, [2]int{}, [2]int{})) }},
		{"stream/dropout-f16", "Dropout with p 0.5, fp16 in and out", 4 * fn, func() error { return wait(tensor.Dropout(h, 0.5, 1)) }},
		{"stream/sum-cols-f16", fmt.Sprintf("SumAxisAs over the first axis of [%d, %d] into fp16, fp16 in (a bias gradient under autocast)", rows, streamCols),
			2*fn + 2*streamCols, func() error { return wait(tensor.SumAxisAs(h, 0, tensor.Float16)) }},
	}
	if want != nil { // unwanted kernels are not run: a profile of the run shows only those wanted
		ops = append(ops[:1], slices.DeleteFunc(ops[1:], func(o streamOp) bool { return !want(o.name) })...)
	}
	return ops, n, done, nil
}

// streamResults turns the fastest times into GB/s, the first op (the
// buffer copy) being the others' baseline.
func streamResults(ops []streamOp, best []time.Duration, n int) []Result {
	var out []Result
	base := 0.0
	for i, o := range ops {
		v := o.bytes / 1e9 / best[i].Seconds()
		r := Result{Name: o.name, Value: v, Unit: "GB/s", Detail: fmt.Sprintf("%s; %d elements, bytes read + written", o.detail, n)}
		if i == 0 {
			base = v
		} else {
			r.Ratio, r.Versus = v/base, ops[0].name
		}
		out = append(out, r)
	}
	return out
}

// fastest runs fs in turn (after one warm-up call each), round after round,
// for at least three rounds and 2*minTime, and returns the fastest call of
// each: on a shared machine the fastest call is the least disturbed one, and
// taking turns exposes all to the same load.
func fastest(minTime time.Duration, fs []func() error) ([]time.Duration, error) {
	for _, f := range fs {
		if err := f(); err != nil {
			return nil, err
		}
	}
	best := make([]time.Duration, len(fs))
	for i := range best {
		best[i] = time.Duration(1<<63 - 1)
	}
	start := time.Now()
	for n := 0; n < 3 || time.Since(start) < 2*minTime; n++ {
		for i, f := range fs {
			t := time.Now()
			if err := f(); err != nil {
				return nil, err
			}
			best[i] = min(best[i], max(time.Since(t), time.Nanosecond))
		}
	}
	return best, nil
}
