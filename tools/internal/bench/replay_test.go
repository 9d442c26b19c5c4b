package bench

import (
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
)

// TestReplay runs the replay measurement briefly and checks that its
// report adds up; it asserts nothing about speed.
func TestReplay(t *testing.T) {
	d := devtest.Open(t)
	train, _ := load(t)
	r, err := ReplayPerDispatch(d, train, 64, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("replayed step %v (%v a dispatch, %d dispatches), recorded %v, batch written in %v", r.Replay, r.PerDispatch(), r.Dispatches, r.Record, r.Load)
	if r.Dispatches < 10 || r.Replay <= 0 || r.Record <= 0 || r.Samples != 2 {
		t.Errorf("report %+v: want the times of a step's dispatches", r)
	}
	rs, err := Replay(d, train, 64, 1)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Result{}
	for _, x := range rs {
		byName[x.Name] = x
		if !(x.Value > 0) || math.IsInf(x.Value, 0) {
			t.Errorf("%s: %g, want positive", x.Name, x.Value)
		}
	}
	if _, ok := byName["dispatch/replay-us"]; !ok {
		t.Error("no dispatch/replay-us")
	}
	g, err := ReplayGPT(d, GPTSize{Layers: 2, Heads: 2, Dim: 32, Block: 16, Batch: 4}, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GPT: replayed step %v (%v a dispatch, %d dispatches), recorded %v, data written in %v", g.Replay, g.PerDispatch(), g.Dispatches, g.Record, g.Load)
	if g.Dispatches < 100 || g.Replay <= 0 || g.Record <= 0 {
		t.Errorf("GPT report %+v: want the times of a step's hundreds of dispatches", g)
	}
}
