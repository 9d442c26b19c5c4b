package bench

import (
	"fmt"
	"time"

	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// ConvShape is a convolution to measure: batch N, Cin to Cout channels,
// square H x W input, K x K kernel, stride 1, no padding.
type ConvShape struct {
	N, Cin, Cout, H, K int
}

// MNISTConv2 is the second convolution of PyTorch's examples/mnist network
// at batch 64: 32 to 64 channels, 3x3, on 26x26 inputs.
var MNISTConv2 = ConvShape{N: 64, Cin: 32, Cout: 64, H: 26, K: 3}

// Conv measures Conv2d forward, backward-input and backward-weight of s in
// fp16 and fp32, in GFLOP/s (2*N*Ho*Wo*Cout*Cin*K*K per pass), each beside
// the MatMul of the same M, N, K and layout that the pass's GEMM has
// (forward: [Cout, Cin*K*K] by [Cin*K*K, N*Ho*Wo]; backward-input: [Cout,
// Cin*K*K]^T by [Cout, N*Ho*Wo]; backward-weight: [Cout, N*Ho*Wo] by
// [Cin*K*K, N*Ho*Wo]^T), measured in the same run, alternately, taking the
// fastest call of each: the ratio is what im2col, col2im and the layout
// permutes cost, or on lavapipe what conv_tex's gathers cost.
func Conv(d *vk.Device, s ConvShape, minTime time.Duration, emit func(Result)) error {
	info := d.Info()
	ho := s.H - s.K + 1
	m, n, k := s.N*ho*ho, s.Cout, s.Cin*s.K*s.K
	gflop := 2 * float64(m) * float64(n) * float64(k) / 1e9
	xs, ws, ys := []int{s.N, s.Cin, s.H, s.H}, []int{s.Cout, s.Cin, s.K, s.K}, []int{s.N, s.Cout, ho, ho}
	for _, dt := range []tensor.DType{tensor.Float16, tensor.Float32} {
		up := func(seed uint64, shape ...int) *tensor.Tensor {
			src := tensor.FromFloat32(d, ref.Rand(shapeLen(shape), seed), shape...)
			defer src.Release()
			return tensor.Cast(src, dt)
		}
		x, w, b, dy := up(1, xs...), up(2, ws...), up(3, s.Cout), up(4, ys...)
		wm, cols, dyT := up(5, n, k), up(6, k, m), up(7, n, m)
		passes := []struct {
			name string
			conv func() []*tensor.Tensor
			mm   func() *tensor.Tensor
		}{
			{"forward",
				func() []*tensor.Tensor { return []*tensor.Tensor{tensor.Conv2d(x, w, b, tensor.Conv2dOpts{})} },
				func() *tensor.Tensor { return tensor.MatMul(wm, cols, tensor.MatMulOpts{Out: dt}) }},
			{"backward-input",
				func() []*tensor.Tensor {
					return []*tensor.Tensor{tensor.Conv2dBackwardInput(dy, w, xs, tensor.Conv2dOpts{})}
				},
				func() *tensor.Tensor { return tensor.MatMul(wm, dyT, tensor.MatMulOpts{TransA: true, Out: dt}) }},
			{"backward-weight",
				func() []*tensor.Tensor {
					dw, db := tensor.Conv2dBackwardWeight(dy, x, ws, tensor.Conv2dOpts{})
					return []*tensor.Tensor{dw, db}
				},
				func() *tensor.Tensor { return tensor.MatMul(dyT, cols, tensor.MatMulOpts{TransB: true, Out: dt}) }},
		}
		var err error
		for _, p := range passes {
			var mmRate, convRate float64
			mmRate, convRate, err = bestRates(minTime, gflop, func() error {
				c := p.mm()
				defer c.Release()
				if err := c.Err(); err != nil {
					return err
				}
				return d.Wait()
			}, func() error {
				outs := p.conv()
				for _, o := range outs {
					defer o.Release()
				}
				for _, o := range outs {
					if err := o.Err(); err != nil {
						return err
					}
				}
				return d.Wait()
			})
			if err != nil {
				err = fmt.Errorf("bench conv2d %s %s: %w", p.name, dt, err)
				break
			}
			stamp := func(r Result) Result {
				r.Device, r.Driver, r.Tier = info.Name, info.DriverName, d.Tier().String()
				return r
			}
			mmName := fmt.Sprintf("conv2d/matmul/%s/%s", p.name, dt)
			emit(stamp(Result{Name: mmName, Value: mmRate, Unit: "GFLOP/s",
				Detail: fmt.Sprintf("MatMul of the pass's GEMM, M=%d N=%d K=%d", m, n, k)}))
			emit(stamp(Result{Name: fmt.Sprintf("conv2d/%s/%s", p.name, dt), Value: convRate, Unit: "GFLOP/s",
				Detail: fmt.Sprintf("x %v, w %v", xs, ws), Ratio: convRate / mmRate, Versus: mmName}))
		}
		for _, t := range []*tensor.Tensor{x, w, b, dy, wm, cols, dyT} {
			t.Release()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// bestRates runs a and b alternately (after one warm-up call each) until
// 2*minTime has passed, and returns work per second of the fastest call of
// each: on a shared machine the best call is the one least disturbed, and
// alternating exposes both to the same load.
func bestRates(minTime time.Duration, work float64, a, b func() error) (ra, rb float64, err error) {
	if err = a(); err == nil {
		err = b()
	}
	if err != nil {
		return 0, 0, err
	}
	best := [2]time.Duration{time.Hour, time.Hour}
	start := time.Now()
	for n := 0; n < 3 || time.Since(start) < 2*minTime; n++ {
		for i, f := range []func() error{a, b} {
			t := time.Now()
			if err := f(); err != nil {
				return 0, 0, err
			}
			best[i] = min(best[i], time.Since(t))
		}
	}
	return work / best[0].Seconds(), work / best[1].Seconds(), nil
}

func shapeLen(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}
