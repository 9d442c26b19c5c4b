package tensor_test

import (
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// BenchmarkLayerNormGPT times LayerNorm forward and backward at the size of
// nanoGPT's CPU recipe (batch 12 x context 64 rows of 128), where a
// training step runs 9 of each.
func BenchmarkLayerNormGPT(b *testing.B) {
	d := devtest.Open(b)
	x := tensor.Full(d, tensor.Float32, 0.5, 768, 128)
	dy := tensor.Full(d, tensor.Float32, 0.25, 768, 128)
	gamma := tensor.Full(d, tensor.Float32, 1, 128)
	for _, t := range []*tensor.Tensor{x, dy, gamma} {
		b.Cleanup(t.Release)
	}
	run := func() {
		y, stats := tensor.LayerNorm(x, gamma, nil, 1e-5)
		dx, dg := tensor.LayerNormBackwardNoBias(dy, x, gamma, stats)
		if err := d.Wait(); err != nil {
			b.Fatal(err)
		}
		for _, t := range []*tensor.Tensor{y, stats, dx, dg} {
			t.Release()
		}
	}
	run()
	for b.Loop() {
		run()
	}
}
