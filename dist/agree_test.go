package dist_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/nn"
)

// TestRanksAgree: NewDataParallel fails on every rank when one passes its
// parameters in another order, even of the same shapes, naming the first
// difference on that rank; it once gave rank 1's b rank 0's a. The same
// parameters in the same order pass.
func TestRanksAgree(t *testing.T) {
	ds := openDevices(t, 2)
	for _, swap := range []bool{false, true} {
		gs := dist.NewLocal(2, dist.Options{})
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for r := range 2 {
			wg.Go(func() {
				a := nn.NewParam(ds[r], "a", make([]float32, 6), 2, 3)
				b := nn.NewParam(ds[r], "b", make([]float32, 6), 2, 3)
				defer a.Value.Release()
				defer b.Value.Release()
				ps := []*nn.Param{a, b}
				if swap && r == 1 {
					ps = []*nn.Param{b, a}
				}
				_, errs[r] = dist.NewDataParallel(gs[r], ps, dist.DataParallelOptions{})
			})
		}
		wg.Wait()
		for _, g := range gs {
			g.Close()
		}
		if !swap {
			for r, err := range errs {
				if err != nil {
					t.Errorf("the same parameters, rank %d: %v", r, err)
				}
			}
			continue
		}
		if errs[0] == nil || !strings.Contains(errs[0].Error(), "1 rank(s) pass other parameters than rank 0") {
			t.Errorf("rank 0: got %v, want an error saying a rank disagrees", errs[0])
		}
		if errs[1] == nil || !strings.Contains(errs[1].Error(), `parameter 0 is "a [2 3] float32" on rank 0 and "b [2 3] float32" on rank 1`) {
			t.Errorf("rank 1: got %v, want an error naming the first difference", errs[1])
		}
	}
}
