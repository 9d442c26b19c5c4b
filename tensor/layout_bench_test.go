package tensor_test

import (
	"testing"

	"github.com/vkamp/vkamp/tensor"
)

// Layout benchmarks over opBench's 16M elements, viewed as [16384, 1024]:
// a transpose of the two axes (every element moves), in fp32 and fp16.

func BenchmarkTransposeF32(b *testing.B) {
	opBench(b, 8*opBenchN, func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Transpose(in[0], 0, 1) }, tensor.Float32)
}

func BenchmarkTransposeF16(b *testing.B) {
	opBench(b, 4*opBenchN, func(in []*tensor.Tensor) *tensor.Tensor { return tensor.Transpose(in[0], 0, 1) }, tensor.Float16)
}

// BenchmarkSoftmaxAxis0 is softmax along the first axis: two transposes
// around the row kernel.
func BenchmarkSoftmaxAxis0(b *testing.B) {
	opBench(b, 8*opBenchN, func(in []*tensor.Tensor) *tensor.Tensor { return tensor.SoftmaxAxis(in[0], 0) }, tensor.Float32)
}
