//go:build unix

package tensor_test

import (
	"fmt"
	"math"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// BenchmarkCausalAttention times a forward and backward pass of fp16
// attention at nanoGPT's shakespeare_char sizes: the CPU recipe (B=12,
// T=64, C=128, 4 heads) and the GPU recipe (B=64, T=256, C=384, 6 heads),
// with the device's kernels and with each kernel family forced. On a CPU
// driver "ratio" runs the shared-memory and the texel kernels in turn and
// reports the CPU time of one over the other (x-texel: how many times less
// CPU the texel kernels take), a figure that survives a loaded machine.
func BenchmarkCausalAttention(b *testing.B) {
	d := devtest.Open(b)
	for _, c := range []struct{ batch, t, c, heads int }{{12, 64, 128, 4}, {64, 256, 384, 6}} {
		b.Run(fmt.Sprintf("B%d_T%d_C%d_H%d", c.batch, c.t, c.c, c.heads), func(b *testing.B) {
			qkv, _ := opRand(b, d, 1, 1, tensor.Float16, c.batch*c.t, 3*c.c)
			dy, _ := opRand(b, d, 2, 1, tensor.Float16, c.batch*c.t, c.c)
			scale := float32(1 / math.Sqrt(float64(c.c/c.heads)))
			step := func(kernels string) {
				defer tensor.SetAttentionKernel(tensor.SetAttentionKernel(kernels))
				y, lse := tensor.CausalAttention(qkv, c.batch, c.heads, scale)
				dq := tensor.CausalAttentionBackward(qkv, y, lse, dy, c.batch, c.heads, scale)
				if _, err := dq.Float32s(); err != nil {
					b.Fatal(err)
				}
				y.Release()
				lse.Release()
				dq.Release()
			}
			fwd := func(kernels string) {
				defer tensor.SetAttentionKernel(tensor.SetAttentionKernel(kernels))
				y, lse := tensor.CausalAttention(qkv, c.batch, c.heads, scale)
				if _, err := lse.Float32s(); err != nil {
					b.Fatal(err)
				}
				y.Release()
				lse.Release()
			}
			kinds := []string{""}
			if d.Info().Type == vk.TypeCPU && !strings.Contains(d.Info().DriverName, "SwiftShader") {
				kinds = append(kinds, "shared", "texel")
			}
			for _, k := range kinds {
				step(k) // compile the pipelines
			}
			for _, k := range kinds {
				name := "kernels=" + k
				if k == "" {
					name = "kernels=device"
				}
				b.Run(name+"/forward", func(b *testing.B) {
					defer cpuPerOp(b)()
					for range b.N {
						fwd(k)
					}
				})
				b.Run(name+"/forward+backward", func(b *testing.B) {
					defer cpuPerOp(b)()
					for range b.N {
						step(k)
					}
				})
			}
			if len(kinds) > 1 {
				b.Run("ratio/forward+backward", func(b *testing.B) {
					var shared, texel time.Duration
					for range b.N {
						t0 := cpuTime()
						step("shared")
						t1 := cpuTime()
						step("texel")
						shared, texel = shared+t1-t0, texel+cpuTime()-t1
					}
					b.ReportMetric(float64(shared)/float64(texel), "x-texel")
				})
			}
		})
	}
}

// BenchmarkEmbeddingBackward times the table gradient at the same sizes
// (65 characters), with fp32 dy.
func BenchmarkEmbeddingBackward(b *testing.B) {
	d := devtest.Open(b)
	for _, c := range []struct{ n, c int }{{12 * 64, 128}, {64 * 256, 384}} {
		b.Run(fmt.Sprintf("N%d_C%d", c.n, c.c), func(b *testing.B) {
			idx := make([]int32, c.n)
			for i := range idx {
				idx[i] = int32(i * 7 % 65)
			}
			ix := castKeep(b, tensor.FromInt32(d, idx, c.n))
			dy, _ := opRand(b, d, 3, 1, tensor.Float32, c.n, c.c)
			for i := range b.N + 1 {
				if i == 1 {
					b.ResetTimer() // the first compiled the pipeline
					defer cpuPerOp(b)()
				}
				dw := tensor.EmbeddingBackward(ix, dy, 65)
				if _, err := dw.Float32s(); err != nil {
					b.Fatal(err)
				}
				dw.Release()
			}
		})
	}
}

// cpuPerOp reports the process's CPU time per op (user and system, all
// threads: lavapipe's included) when the returned func runs: on a shared
// machine it says more than the wall time.
func cpuPerOp(b *testing.B) func() {
	start := cpuTime()
	return func() { b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N), "cpu-µs/op") }
}

// cpuTime is the process's CPU time so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
