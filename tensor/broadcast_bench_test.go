package tensor_test

import (
	"testing"

	"github.com/vkamp/vkamp/tensor"
)

// The broadcasting kernel against the plain one (BenchmarkAddF32): Div of
// two same-shaped tensors takes the strided path with no repeat, AddRow a
// [16K, 1024] plus a [1024] row, Where a [16K, 1024] condition.

func BenchmarkDivF32(b *testing.B) {
	opBench(b, opBenchN*(4+4+4), func(x []*tensor.Tensor) *tensor.Tensor { return tensor.Div(x[0], x[1], tensor.Float32) },
		tensor.Float32, tensor.Float32)
}

func BenchmarkAddRowF32(b *testing.B) {
	var row *tensor.Tensor
	opBench(b, opBenchN*(4+4), func(x []*tensor.Tensor) *tensor.Tensor {
		if row == nil {
			row = tensor.Full(x[0].Device(), tensor.Float32, 1, 1024)
			b.Cleanup(row.Release)
		}
		return tensor.Add(x[0], row, tensor.Float32)
	}, tensor.Float32)
}

func BenchmarkSumAxes0F32(b *testing.B) {
	opBench(b, opBenchN*4, func(x []*tensor.Tensor) *tensor.Tensor { return tensor.SumAxes(x[0], []int{0}, false) }, tensor.Float32)
}
