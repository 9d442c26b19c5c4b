package tensor_test

import (
	"fmt"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// BenchmarkMaxPool2d times MaxPool2d(2) and its backward pass in fp16 at
// batch 64: over the MNIST example's conv2 output, whose windows tile it
// with rows of whole blocks of 8 (the two-by-two texel forms on lavapipe),
// and over LeNet's 28x28 (the general kernels).
func BenchmarkMaxPool2d(b *testing.B) {
	d := devtest.Open(b)
	k := [2]int{2, 2}
	for _, xs := range [][]int{{64, 64, 24, 24}, {64, 32, 28, 28}} {
		ys := []int{xs[0], xs[1], xs[2] / 2, xs[3] / 2}
		x, _ := opRand(b, d, 1, 1, tensor.Float16, xs...)
		dy, _ := opRand(b, d, 2, 1, tensor.Float16, ys...)
		y, arg := tensor.MaxPool2d(x, k, [2]int{}, [2]int{})
		b.Cleanup(y.Release)
		b.Cleanup(arg.Release)
		run := func(name string, op func() []*tensor.Tensor) {
			b.Run(fmt.Sprintf("%s/%dx%d", name, xs[2], xs[3]), func(b *testing.B) {
				for b.Loop() {
					outs := op()
					if err := d.Wait(); err != nil {
						b.Fatal(err)
					}
					for _, o := range outs {
						if err := o.Err(); err != nil {
							b.Fatal(err)
						}
						o.Release()
					}
				}
			})
		}
		run("forward", func() []*tensor.Tensor {
			y, arg := tensor.MaxPool2d(x, k, [2]int{}, [2]int{})
			return []*tensor.Tensor{y, arg}
		})
		run("backward", func() []*tensor.Tensor {
			return []*tensor.Tensor{tensor.MaxPool2dBackward(dy, arg, xs, k, [2]int{}, [2]int{})}
		})
	}
}
