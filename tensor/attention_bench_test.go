package tensor_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// BenchmarkCausalAttention times a forward and backward pass of fp16
// attention at nanoGPT's shakespeare_char sizes: the CPU recipe (B=12,
// T=64, C=128, 4 heads) and the GPU recipe (B=64, T=256, C=384, 6 heads).
func BenchmarkCausalAttention(b *testing.B) {
	d := devtest.Open(b)
	for _, c := range []struct{ batch, t, c, heads int }{{12, 64, 128, 4}, {64, 256, 384, 6}} {
		b.Run(fmt.Sprintf("B%d_T%d_C%d_H%d", c.batch, c.t, c.c, c.heads), func(b *testing.B) {
			qkv, _ := opRand(b, d, 1, 1, tensor.Float16, c.batch*c.t, 3*c.c)
			dy, _ := opRand(b, d, 2, 1, tensor.Float16, c.batch*c.t, c.c)
			scale := float32(1 / math.Sqrt(float64(c.c/c.heads)))
			step := func() {
				y, lse := tensor.CausalAttention(qkv, c.batch, c.heads, scale)
				dq := tensor.CausalAttentionBackward(qkv, y, lse, dy, c.batch, c.heads, scale)
				if _, err := dq.Float32s(); err != nil {
					b.Fatal(err)
				}
				y.Release()
				lse.Release()
				dq.Release()
			}
			step() // compile the pipelines
			b.ResetTimer()
			for range b.N {
				step()
			}
		})
	}
}
