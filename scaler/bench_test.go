package scaler_test

import (
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
)

// The fused check-and-unscale reads and writes every gradient byte once, as
// a buffer copy of the same bytes does: their GB/s compare directly.
const benchElems = 8 << 20 // 32 MiB of fp32 gradients

func BenchmarkUnscale(b *testing.B) {
	d := devtest.Open(b)
	s := newScaler(b, scaler.Options{InitScale: 4})
	o := &sgd{grads: []*tensor.Tensor{tensor.Zeros(d, tensor.Float32, benchElems)}}
	defer o.grads[0].Release()
	l := loss(b, d)
	b.SetBytes(4 * benchElems)
	b.ResetTimer()
	for range b.N {
		s.Scale(l).Release()
		if err := s.Unscale(o); err != nil {
			b.Fatal(err)
		}
		if err := s.UpdateTo(4); err != nil {
			b.Fatal(err)
		}
		if err := d.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCopySameBytes(b *testing.B) {
	d := devtest.Open(b)
	src := tensor.Zeros(d, tensor.Float32, benchElems)
	defer src.Release()
	b.SetBytes(4 * benchElems)
	b.ResetTimer()
	for range b.N {
		tensor.Cast(src, tensor.Float32).Release() // a copy: every byte read and written once
		if err := d.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}
