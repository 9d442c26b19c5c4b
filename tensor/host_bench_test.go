package tensor_test

import (
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// BenchmarkOpHost measures the host cost of one small op (an fp32 Add of
// 256 elements: output allocation, launch, release), draining the device
// every 128 ops outside the timer. With -benchmem it shows what an op
// allocates on the Go heap.
func BenchmarkOpHost(b *testing.B) {
	d := devtest.Open(b)
	x := tensor.Full(d, tensor.Float32, 0.5, 256)
	y := tensor.Full(d, tensor.Float32, 0.25, 256)
	b.Cleanup(x.Release)
	b.Cleanup(y.Release)
	tensor.Add(x, y, tensor.Float32).Release() // builds the pipeline outside the timing
	i := 0
	for b.Loop() {
		tensor.Add(x, y, tensor.Float32).Release()
		if i++; i%128 == 0 {
			b.StopTimer()
			if err := d.Wait(); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
}
