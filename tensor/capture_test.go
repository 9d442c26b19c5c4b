package tensor_test

import (
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// TestReplayerFeeds steps acc += x under a Replayer, with x fed four ways,
// and checks acc against the sum of what was fed: a replay must never add
// a batch that the host did not give the step. A new tensor per step, or
// two in turns, is recorded, not replayed (the graph reads the tensor it
// was captured with) but for the steps of two in turns that write the
// captured one; one tensor written each step is replayed, and so is
// a step after which the host wrote a tensor the step does not use, except
// the first step after that write.
func TestReplayerFeeds(t *testing.T) {
	const steps, n = 7, 5
	cases := []struct {
		name               string
		feeds              int  // tensors the batches go to in turns; 0: a new one each step
		other              bool // also write an unrelated tensor before step 4
		replayed, diverted int
	}{
		{"new tensor each step", 0, false, 0, steps - 2},
		{"two in turns", 2, false, 2, 3}, // replayed when the captured one is fed: steps 3 and 5
		{"one tensor", 1, false, steps - 2, 0},
		{"one tensor, another written once", 1, true, steps - 3, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := devtest.Open(t)
			var live []*tensor.Tensor
			t.Cleanup(func() {
				for _, x := range live {
					x.Release()
				}
			})
			keep := func(x *tensor.Tensor) *tensor.Tensor { live = append(live, x); return x }
			acc := keep(tensor.FromFloat32(d, make([]float32, n), n))
			flag := keep(tensor.FromFloat32(d, []float32{0}, 1))
			other := keep(tensor.FromFloat32(d, make([]float32, n), n))
			feeds := make([]*tensor.Tensor, c.feeds)
			for i := range feeds {
				feeds[i] = keep(tensor.FromFloat32(d, make([]float32, n), n))
			}
			rp := tensor.NewReplayer(d)
			t.Cleanup(func() { rp.Close() })
			want := make([]float32, n)
			for s := range steps {
				batch := replayBatch(s, n, want)
				var x *tensor.Tensor
				if c.feeds == 0 {
					x = keep(tensor.FromFloat32(d, batch, n))
				} else {
					x = feeds[s%c.feeds]
					if err := x.SetFloat32s(batch); err != nil {
						t.Fatal(err)
					}
				}
				if c.other && s == 4 {
					if err := other.SetFloat32s(batch); err != nil {
						t.Fatal(err)
					}
				}
				if err := rp.Step("acc", func() error { return tensor.AxpyUnless(1, x, acc, flag) }); err != nil {
					t.Fatalf("step %d: %v", s, err)
				}
			}
			if got, err := acc.Float32s(); err != nil || !slices.Equal(got, want) {
				t.Fatalf("sum of the batches %v (%v), want %v", got, err, want)
			}
			if rp.Replayed != c.replayed || rp.Diverted != c.diverted || rp.Captured != 1 {
				t.Errorf("%d steps replayed, %d diverted, %d captured; want %d, %d, 1",
					rp.Replayed, rp.Diverted, rp.Captured, c.replayed, c.diverted)
			}
		})
	}
}

// TestReplayerStepFunctions steps one key with two step functions in
// turns, as a training and an evaluation step keyed by their shapes would
// be: each is captured and replayed as itself (a replay of the other
// would add its batch to the wrong sum), and a closure made anew each step
// from one literal still replays.
func TestReplayerStepFunctions(t *testing.T) {
	const steps, n = 6, 4
	d := devtest.Open(t)
	sums := [2]*tensor.Tensor{tensor.FromFloat32(d, make([]float32, n), n), tensor.FromFloat32(d, make([]float32, n), n)}
	x := tensor.FromFloat32(d, make([]float32, n), n)
	flag := tensor.FromFloat32(d, []float32{0}, 1)
	for _, v := range []*tensor.Tensor{sums[0], sums[1], x, flag} {
		defer v.Release()
	}
	rp := tensor.NewReplayer(d)
	defer rp.Close()
	want := [2][]float32{make([]float32, n), make([]float32, n)}
	for s := range 2 * steps {
		if err := x.SetFloat32s(replayBatch(s, n, want[s%2])); err != nil {
			t.Fatal(err)
		}
		var err error
		if s%2 == 0 {
			err = rp.Step("shape", func() error { return tensor.AxpyUnless(1, x, sums[0], flag) })
		} else {
			err = rp.Step("shape", func() error { return tensor.AxpyUnless(1, x, sums[1], flag) })
		}
		if err != nil {
			t.Fatalf("step %d: %v", s, err)
		}
	}
	for j, sum := range sums {
		if got, err := sum.Float32s(); err != nil || !slices.Equal(got, want[j]) {
			t.Fatalf("sum of step function %d: %v (%v), want %v", j, got, err, want[j])
		}
	}
	if rp.Graphs() != 2 || rp.Recorded != 2 || rp.Captured != 2 || rp.Replayed != 2*steps-4 {
		t.Errorf("%d graphs, %d steps recorded, %d captured, %d replayed; want 2, 2, 2, %d",
			rp.Graphs(), rp.Recorded, rp.Captured, rp.Replayed, 2*steps-4)
	}
}

// replayBatch returns step s's batch of n values, distinct from every other
// step's, and adds it to sum.
func replayBatch(s, n int, sum []float32) []float32 {
	batch := make([]float32, n)
	for i := range batch {
		batch[i] = float32(1 + s*n + i)
		sum[i] += batch[i]
	}
	return batch
}
