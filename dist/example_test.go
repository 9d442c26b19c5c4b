package dist_test

import (
	"fmt"
	"sync"

	"github.com/vkamp/vkamp/dist"
)

// Two ranks in one process, one goroutine each, average their values as
// DataParallel averages gradients; under mpirun, dist.NewMPI gives the
// same Group with one rank a process.
func Example() {
	gs := dist.NewLocal(2, dist.Options{})
	out := make([][]float32, 2)
	var wg sync.WaitGroup
	for r, g := range gs {
		wg.Go(func() {
			x := []float32{float32(r), 10 * float32(r)}
			if err := dist.AllReduceAvg(g, x); err != nil {
				panic(err)
			}
			out[r] = x
		})
	}
	wg.Wait()
	lo, hi := dist.Shard(64, 1, 2)
	fmt.Println(out[0], out[1], lo, hi)
	// Output: [0.5 5] [0.5 5] 32 64
}
