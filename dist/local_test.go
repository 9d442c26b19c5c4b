package dist_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/vkamp/vkamp/dist"
)

// TestLocalCollectives: sums in rank order, broadcast, max and barrier on
// three ranks.
func TestLocalCollectives(t *testing.T) {
	gs := dist.NewLocal(3, dist.Options{})
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for r, g := range gs {
		wg.Go(func() {
			errs[r] = func() error {
				x := []float32{float32(r), 1}
				if err := g.AllReduceSum(x); err != nil {
					return err
				}
				if x[0] != 3 || x[1] != 3 {
					return errors.New("sum wrong")
				}
				b := []float32{float32(r)}
				if err := g.Broadcast(b, 2); err != nil {
					return err
				}
				if b[0] != 2 {
					return errors.New("broadcast wrong")
				}
				m, err := g.Max(float32(-r))
				if err != nil || m != 0 {
					return errors.Join(err, errors.New("max wrong"))
				}
				return g.Barrier()
			}()
		})
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
}

// TestLocalDeadPeer: a rank that never joins makes the others fail with
// ErrTimeout instead of waiting for ever; one that closes makes them fail
// at once.
func TestLocalDeadPeer(t *testing.T) {
	gs := dist.NewLocal(2, dist.Options{Timeout: 100 * time.Millisecond})
	err := gs[0].AllReduceSum([]float32{1})
	if !errors.Is(err, dist.ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	if err := gs[1].Barrier(); !errors.Is(err, dist.ErrTimeout) {
		t.Errorf("after the timeout, the other rank got %v, want the group's error", err)
	}

	gs = dist.NewLocal(2, dist.Options{Timeout: time.Hour})
	done := make(chan error)
	go func() { done <- gs[0].Barrier() }()
	gs[1].Close()
	if err := <-done; !errors.Is(err, dist.ErrBroken) {
		t.Errorf("with rank 1 closed, rank 0 got %v, want ErrBroken", err)
	}
}

// TestShard: contiguous parts, the remainder spread.
func TestShard(t *testing.T) {
	var got [][2]int
	for r := range 3 {
		lo, hi := dist.Shard(10, r, 3)
		got = append(got, [2]int{lo, hi})
	}
	want := [][2]int{{0, 3}, {3, 6}, {6, 10}}
	if !slices.Equal(got, want) {
		t.Errorf("Shard(10, r, 3) = %v, want %v", got, want)
	}
}
