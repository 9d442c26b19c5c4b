package tensor_test

import (
	"fmt"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

var mmBenchSizes = []int{256, 512, 1024, 2048}

// BenchmarkMatMul times square matmuls on the device, fp16 in and out (fp32
// accumulation) and fp32, and the same fp32 matmul on the CPU with gonum for
// comparison. Each device iteration waits for the result.
func BenchmarkMatMul(b *testing.B) {
	d := devtest.Open(b)
	for _, dt := range []struct {
		name string
		dt   tensor.DType
	}{{"fp16", mmF16}, {"fp32", mmF32}} {
		for _, n := range mmBenchSizes {
			b.Run(fmt.Sprintf("%s/%d", dt.name, n), func(b *testing.B) { mmBench(b, d, n, dt.dt) })
		}
	}
	for _, n := range mmBenchSizes {
		b.Run(fmt.Sprintf("gonum32/%d", n), func(b *testing.B) { mmBenchGonum(b, n) })
	}
}

func mmBench(b *testing.B, d *vk.Device, n int, dt tensor.DType) {
	x := tensor.Full(d, dt, 0.5, n, n)
	y := tensor.Full(d, dt, 0.25, n, n)
	b.Cleanup(x.Release)
	b.Cleanup(y.Release)
	o := tensor.MatMulOpts{Out: dt}
	warm := tensor.MatMul(x, y, o) // builds the pipeline outside the timing
	if err := d.Wait(); err != nil {
		b.Fatal(err)
	}
	if err := warm.Err(); err != nil {
		b.Fatal(err)
	}
	warm.Release()
	b.SetBytes(3 * int64(n*n*dt.Size()))
	for b.Loop() {
		out := tensor.MatMul(x, y, o)
		if err := d.Wait(); err != nil {
			b.Fatal(err)
		}
		if err := out.Err(); err != nil {
			b.Fatal(err)
		}
		out.Release()
	}
	mmReportFlops(b, n)
}

func mmBenchGonum(b *testing.B, n int) {
	mat := func(v float32) blas32.General {
		m := blas32.General{Rows: n, Cols: n, Stride: n, Data: make([]float32, n*n)}
		for i := range m.Data {
			m.Data[i] = v
		}
		return m
	}
	x, y, z := mat(0.5), mat(0.25), mat(0)
	b.SetBytes(3 * int64(n*n*4))
	for b.Loop() {
		blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, x, y, 0, z)
	}
	mmReportFlops(b, n)
}

func mmReportFlops(b *testing.B, n int) {
	b.ReportMetric(2*float64(n)*float64(n)*float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// mmShape is a matrix product of a model's training step.
type mmShape struct {
	name           string
	m, n, k        int
	transA, transB bool
}

// mmGPTShapes are the matrix products of a training step of nanoGPT's CPU
// recipe (768 rows: batch 12 of context 64; width 128; vocabulary 65): the
// forward of each Linear (x w^T), its input gradient (dy w) and its weight
// gradient (dy^T x), as nn issues them under fp16 autocast.
var mmGPTShapes = []mmShape{
	{"qkv", 768, 384, 128, false, true}, {"proj", 768, 128, 128, false, true},
	{"fc", 768, 512, 128, false, true}, {"fc2", 768, 128, 512, false, true},
	{"lm_head", 768, 65, 128, false, true},
	{"qkv_dx", 768, 128, 384, false, false}, {"fc_dx", 768, 128, 512, false, false},
	{"fc2_dx", 768, 512, 128, false, false},
	{"qkv_dw", 384, 128, 768, true, false}, {"fc_dw", 512, 128, 768, true, false},
	{"fc2_dw", 128, 512, 768, true, false},
}

// mmMLPShapes are the products of the MNIST MLP's step (784-256-10, batch
// 64) that take matmul_tex on lavapipe: the first layer's forward, input
// gradient and weight gradient, whose K of 64 leaves the epilogue a large
// share.
var mmMLPShapes = []mmShape{
	{"fc1", 64, 256, 784, false, true}, {"fc1_dx", 64, 784, 256, false, false}, {"fc1_dw", 256, 784, 64, true, false},
}

// BenchmarkMatMulGPT times the GPT's fp16 products (fp16 out), each waiting
// for its result.
func BenchmarkMatMulGPT(b *testing.B) { mmBenchShapes(b, mmGPTShapes) }

// BenchmarkMatMulMLP times the MLP's, as BenchmarkMatMulGPT.
func BenchmarkMatMulMLP(b *testing.B) { mmBenchShapes(b, mmMLPShapes) }

func mmBenchShapes(b *testing.B, shapes []mmShape) {
	d := devtest.Open(b)
	for _, s := range shapes {
		b.Run(s.name, func(b *testing.B) {
			as, bs := []int{s.m, s.k}, []int{s.k, s.n}
			if s.transA {
				as = []int{s.k, s.m}
			}
			if s.transB {
				bs = []int{s.n, s.k}
			}
			x, y := tensor.Full(d, mmF16, 0.5, as...), tensor.Full(d, mmF16, 0.25, bs...)
			b.Cleanup(x.Release)
			b.Cleanup(y.Release)
			o := tensor.MatMulOpts{TransA: s.transA, TransB: s.transB, Out: mmF16}
			warm := tensor.MatMul(x, y, o) // builds the pipeline outside the timing
			if err := d.Wait(); err != nil {
				b.Fatal(err)
			}
			warm.Release()
			for b.Loop() {
				out := tensor.MatMul(x, y, o)
				if err := d.Wait(); err != nil {
					b.Fatal(err)
				}
				if err := out.Err(); err != nil {
					b.Fatal(err)
				}
				out.Release()
			}
			b.ReportMetric(2*float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
