package dist_test

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
)

// TestOverlapMatchesAfterBackward: reducing the buckets during backward
// (GradReady) gives the weights of reducing them after it, bit for bit, in
// fp32 and fp16 AMP, with the MLP's parameters in two buckets (fc1's
// weight alone, over the 64 KiB cap, and the rest).
func TestOverlapMatchesAfterBackward(t *testing.T) {
	useSGD(t)
	set := loadMNIST(t)
	for _, amp := range []bool{false, true} {
		autocast = amp
		after := trainLocal(t, openDevices(t, 2), set, 4, nil)
		overlap, readyAtBackward = true, nil
		during := trainLocal(t, openDevices(t, 2), set, 4, nil)
		overlap, autocast = false, true
		if len(readyAtBackward) != 2*4 {
			t.Fatalf("%d overlapped steps recorded, want 8", len(readyAtBackward))
		}
		for _, r := range readyAtBackward {
			if r != [2]int{2, 2} {
				t.Errorf("amp %v: %d of %d buckets started when backward returned, want 2 of 2", amp, r[0], r[1])
			}
		}
		for i := range during {
			if d := maxDiff(during[i].weights, after[i].weights); d != 0 {
				t.Errorf("amp %v rank %d: overlapped weights differ from those reduced after backward by %g", amp, i, d)
			}
		}
		if d := maxDiff(during[0].weights, during[1].weights); d != 0 {
			t.Errorf("amp %v: overlapped ranks 0 and 1 differ by %g", amp, d)
		}
	}
}

// TestOverlapErrors: a bucket's failure comes back from AllReduceGrads,
// and no goroutine outlives it: a collective with a closed peer, and a
// gradient reported ready twice.
func TestOverlapErrors(t *testing.T) {
	d := devtest.Open(t)
	p := nn.NewParam(d, "p", make([]float32, 8), 8)
	q := nn.NewParam(d, "q", make([]float32, 8), 8)
	t.Cleanup(func() { p.Close(); q.Close() })
	before := runtime.NumGoroutine()

	dp := pair(t, p, q, 32)
	dp[1].Group().Close()
	dp[0].GradReady(q) // q's bucket is first: its reduction starts, and fails
	if err := dp[0].AllReduceGrads(); !errors.Is(err, dist.ErrBroken) {
		t.Errorf("AllReduceGrads with a closed peer: %v, want ErrBroken", err)
	}

	dp = pair(t, p, q, 0)
	dp[0].GradReady(p)
	dp[0].GradReady(p) // one bucket of two: no collective starts
	if err := dp[0].AllReduceGrads(); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("AllReduceGrads after a gradient reported twice: %v", err)
	}
	// The goroutines return right after AllReduceGrads wakes up: give
	// them a moment to be gone.
	for range 100 {
		if runtime.NumGoroutine() <= before {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after AllReduceGrads, %d before", n, before)
	}
}

// pair returns the DataParallels of the two ranks of a local group over
// the same parameters, made together (they broadcast).
func pair(t *testing.T, p, q *nn.Param, bucketBytes int) [2]*dist.DataParallel {
	gs := dist.NewLocal(2, dist.Options{})
	var dp [2]*dist.DataParallel
	var errs [2]error
	var wg sync.WaitGroup
	for i := range dp {
		wg.Go(func() {
			dp[i], errs[i] = dist.NewDataParallel(gs[i], []*nn.Param{p, q}, dist.DataParallelOptions{BucketBytes: bucketBytes})
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return dp
}
