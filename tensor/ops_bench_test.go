package tensor_test

import (
	"fmt"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// opBenchN is the element count of the benchmarks: 16M, 64 MiB of fp32.
const opBenchN = 16 << 20

// opBench times op on inputs of the given dtypes, waiting for the device in
// every iteration; bytes is what one call reads and writes. MB/s counts the
// whole call, output allocation included; where the device has timestamps,
// kernel-GB/s counts the kernels' device time only.
func opBench(b *testing.B, bytes int64, op func(ins []*tensor.Tensor) *tensor.Tensor, dts ...tensor.DType) {
	opBenchSized(b, opBenchN, bytes, op, dts...)
}

// opBenchSized is opBench on inputs of n elements (a multiple of 1024).
func opBenchSized(b *testing.B, n int, bytes int64, op func(ins []*tensor.Tensor) *tensor.Tensor, dts ...tensor.DType) {
	d := devtest.Open(b)
	if d.Info().Timestamps {
		d = devtest.Open(b, vk.Options{Timestamps: true})
	}
	ins := make([]*tensor.Tensor, len(dts))
	for i, dt := range dts {
		ins[i] = tensor.Full(d, dt, 0.5, n/1024, 1024) // rows of 1024 for Softmax
		b.Cleanup(ins[i].Release)
	}
	warm := op(ins) // builds the pipeline outside the timing
	if err := d.Wait(); err != nil {
		b.Fatal(err)
	}
	warm.Release()
	before := opKernelNanos(d)
	b.SetBytes(bytes)
	for b.Loop() {
		out := op(ins)
		if err := d.Wait(); err != nil {
			b.Fatal(err)
		}
		if err := out.Err(); err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	if ns := opKernelNanos(d) - before; ns > 0 {
		b.ReportMetric(float64(bytes)*float64(b.N)/ns, "kernel-GB/s")
	}
}

// opKernelNanos is the device time of all kernels so far (0 without
// timestamps).
func opKernelNanos(d *vk.Device) float64 {
	var ns float64
	for _, kt := range d.KernelTimes() {
		ns += kt.Nanoseconds
	}
	return ns
}

func BenchmarkCastF32ToF16(b *testing.B) {
	opBench(b, opBenchN*(4+2), func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Cast(x[0], tensor.Float16) }, tensor.Float32)
}

func BenchmarkCastF16ToF32(b *testing.B) {
	opBench(b, opBenchN*(2+4), func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Cast(x[0], tensor.Float32) }, tensor.Float16)
}

func BenchmarkAddF32(b *testing.B) {
	opBench(b, opBenchN*(4+4+4), func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Add(x[0], x[1], tensor.Float32) },
		tensor.Float32, tensor.Float32)
}

func BenchmarkAddF16(b *testing.B) {
	opBench(b, opBenchN*(2+2+2), func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Add(x[0], x[1], tensor.Float16) },
		tensor.Float16, tensor.Float16)
}

func BenchmarkAxpyF16F32(b *testing.B) {
	opBench(b, opBenchN*(2+4+4), func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Axpy(-0.01, x[0], x[1], tensor.Float32) },
		tensor.Float16, tensor.Float32)
}

func BenchmarkGELUF16(b *testing.B) {
	opBench(b, opBenchN*(2+2), func(x []*tensor.Tensor) *tensor.Tensor { return tensor.GELU(x[0], tensor.Float16) }, tensor.Float16)
}

// BenchmarkReLUF16 times ReLU from an MLP activation's size up: the small
// sizes show the cost per workgroup (tensor/texels.go's texGroups).
func BenchmarkReLUF16(b *testing.B) {
	for _, n := range []int{16 << 10, 256 << 10, 2 << 20} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			opBenchSized(b, n, int64(n)*(2+2), func(x []*tensor.Tensor) *tensor.Tensor { return tensor.ReLU(x[0], tensor.Float16) },
				tensor.Float16)
		})
	}
}

// BenchmarkReLUBackwardF16 times the MNIST MLP's ReLU gradient under
// autocast, fp16 dy and x to fp16, at its size (64x256) and larger.
func BenchmarkReLUBackwardF16(b *testing.B) {
	for _, n := range []int{16 << 10, 256 << 10, 2 << 20} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			opBenchSized(b, n, int64(n)*(2+2+2), func(x []*tensor.Tensor) *tensor.Tensor {
				return tensor.ReLUBackward(x[0], x[1], tensor.Float16)
			}, tensor.Float16, tensor.Float16)
		})
	}
}

func BenchmarkSumF32(b *testing.B) {
	opBench(b, opBenchN*4, func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Sum(x[0]) }, tensor.Float32)
}

func BenchmarkSoftmaxF16(b *testing.B) {
	opBench(b, opBenchN*(2+4), func(x []*tensor.Tensor) *tensor.Tensor {
		return tensor.Softmax(x[0])
	}, tensor.Float16)
}

// BenchmarkSumAxisAsF16 times bias gradients under autocast: fp16 sums over
// the rows into fp16, for the GPT's CPU recipe ([768, 512] and [768, 128]),
// the MNIST MLP ([64, 256]) and GPT-2 small at context 1024 ([12288, 768]).
func BenchmarkSumAxisAsF16(b *testing.B) {
	d := devtest.Open(b)
	for _, s := range [][]int{{768, 512}, {768, 128}, {64, 256}, {12288, 768}} {
		x, _ := opRand(b, d, 1, 1, tensor.Float16, s...)
		b.Run(fmt.Sprintf("%dx%d", s[0], s[1]), func(b *testing.B) {
			for b.Loop() {
				y := tensor.SumAxisAs(x, 0, tensor.Float16)
				if err := d.Wait(); err != nil {
					b.Fatal(err)
				}
				if err := y.Err(); err != nil {
					b.Fatal(err)
				}
				y.Release()
			}
		})
	}
}
