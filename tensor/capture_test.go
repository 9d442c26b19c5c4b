package tensor_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tensor"
)

// TestReplayerFeeds steps acc += x under a Replayer, with x fed four ways,
// and checks acc against the sum of what was fed: a replay must never add
// a batch that the host did not give the step. A new tensor per step is
// recorded (its trace binds another tensor each time); two in turns get a
// graph each (the second is captured when its work comes again); one
// tensor written each step is replayed, whatever else the host writes.
func TestReplayerFeeds(t *testing.T) {
	const steps, n = 7, 5
	cases := []struct {
		name               string
		feeds              int  // tensors the batches go to in turns; 0: a new one each step
		other              bool // also write an unrelated tensor before step 4
		replayed, diverted int
		captured           int
	}{
		{"new tensor each step", 0, false, 0, steps - 2, 1},
		{"two in turns", 2, false, 3, 1, 2}, // steps 0 and 2 recorded, 1 and 4 captured, 3, 5 and 6 replayed
		{"one tensor", 1, false, steps - 2, 0, 1},
		{"one tensor, another written once", 1, true, steps - 2, 0, 1},
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
			if rp.Replayed != c.replayed || rp.Diverted != c.diverted || rp.Captured != c.captured {
				t.Errorf("%d steps replayed, %d diverted, %d captured; want %d, %d, %d",
					rp.Replayed, rp.Diverted, rp.Captured, c.replayed, c.diverted, c.captured)
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

// TestReplayerOutputs: a step that makes a tensor and keeps it (its output)
// gives it that step's value every time: it is recorded, never replayed,
// since a graph would write the tensor made when it was captured.
func TestReplayerOutputs(t *testing.T) {
	d := devtest.Open(t)
	x := tensor.FromFloat32(d, make([]float32, 4), 4)
	defer x.Release()
	rp := tensor.NewReplayer(d)
	defer rp.Close()
	for s := range 5 {
		v := float32(s + 1)
		if err := x.SetFloat32s([]float32{v, v, v, v}); err != nil {
			t.Fatal(err)
		}
		var out *tensor.Tensor
		if err := rp.Step("out", func() error { out = tensor.Add(x, x, tensor.Float32); return out.Err() }); err != nil {
			t.Fatalf("step %d: %v", s, err)
		}
		got, err := out.Float32s()
		out.Release()
		if err != nil || !slices.Equal(got, []float32{2 * v, 2 * v, 2 * v, 2 * v}) {
			t.Fatalf("step %d: output %v (%v), want %g each", s, got, err, 2*v)
		}
	}
	if rp.Replayed != 0 || rp.Captured != 0 || !strings.Contains(rp.LastDiverted, "keeps a tensor") {
		t.Errorf("%d replayed, %d captured, last diverted %q; want none, none, the kept tensor named", rp.Replayed, rp.Captured, rp.LastDiverted)
	}
}
