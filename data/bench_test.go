package data_test

import (
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/data"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/tensor"
)

// BenchmarkLoader times a step of MNIST's first layer (fp16 64x784 by
// 784x256, its sum) per batch, with the batch prepared in Next (sync) or in
// the background while the step before runs: the difference per step is
// the host's gather and upload that the background goroutine takes off the
// step's path (go test -bench Loader ./data).
func BenchmarkLoader(b *testing.B) {
	d := devtest.Open(b)
	train, _, err := mnist.Load("../testdata/mnist")
	if err != nil {
		b.Fatal(err)
	}
	src, err := data.MNIST(train)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	wv := make([]float32, 784*256)
	for i := range wv {
		wv[i] = float32(r.NormFloat64() * 0.05)
	}
	w := tensor.Cast(tensor.FromFloat32(d, wv, 784, 256), tensor.Float16)
	defer w.Release()
	for _, sync := range []bool{true, false} {
		name := map[bool]string{true: "sync", false: "background"}[sync]
		b.Run(name, func(b *testing.B) {
			l, err := data.New(d, src, data.Options{Batch: 64, Shuffle: true, DropLast: true, XDType: tensor.Float16, Sync: sync})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			for b.Loop() {
				bt, ok, err := l.Next()
				if err != nil {
					b.Fatal(err)
				}
				if !ok {
					continue
				}
				h := tensor.MatMul(bt.X, w, tensor.MatMulOpts{Out: tensor.Float16})
				s := tensor.SumAxes(h, nil, false)
				h.Release()
				s.Release()
			}
			if err := d.Wait(); err != nil {
				b.Fatal(err)
			}
		})
	}
}
