package trainer

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkGather times gather against plain row copies on the MLP's fp16
// batch of 64 rows from 8,000 digits, the caches and TLB cold as after a
// step (a 64 MiB walk between rounds, outside the time):
//
//	go test -run XXX -bench Gather ./tools/internal/trainer
func BenchmarkGather(b *testing.B) {
	const px, n, batch = 28 * 28, 8000, 64
	src, dst := make([]uint16, n*px), make([]uint16, batch*px)
	for i := range src {
		src[i] = uint16(i)
	}
	copyRows := func(dst, src []uint16, px int, idx []int) {
		for j, k := range idx {
			copy(dst[j*px:(j+1)*px], src[k*px:(k+1)*px])
		}
	}
	junk := make([]byte, 64<<20)
	for _, c := range []struct {
		name string
		f    func(dst, src []uint16, px int, idx []int)
	}{{"copies", copyRows}, {"gather", gather[uint16]}} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				for j := 0; j < len(junk); j += 64 {
					junk[j]++
				}
				idx := rng.Perm(n)[:batch]
				b.StartTimer()
				c.f(dst, src, px, idx)
			}
		})
	}
}
