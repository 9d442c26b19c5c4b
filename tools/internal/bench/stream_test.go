package bench

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/vk"
)

// TestStream runs the streaming measurement on a few rows and checks that
// every kernel is reported beside copy/buffer with a consistent ratio; it
// asserts nothing about speed.
func TestStream(t *testing.T) {
	d := devtest.Open(t)
	var rs []Result
	if err := Stream(d, 2*streamCols+5, time.Millisecond, nil, func(r Result) { rs = append(rs, r) }); err != nil {
		t.Fatal(err)
	}
	want := StreamNames
	if len(rs) != len(want) {
		t.Fatalf("%d results, want %d: %+v", len(rs), len(want), rs)
	}
	for i, r := range rs {
		if r.Name != want[i] || r.Unit != "GB/s" || !(r.Value > 0) || math.IsInf(r.Value, 0) || r.Device == "" {
			t.Errorf("result %d: %+v, want %s in GB/s, positive", i, r, want[i])
		}
		if !strings.Contains(r.Detail, "3072 elements") {
			t.Errorf("%s: detail %q: want the rounded-up 3072 elements", r.Name, r.Detail)
		}
		if i == 0 {
			if r.Versus != "" {
				t.Errorf("copy/buffer compared with %q", r.Versus)
			}
			continue
		}
		if r.Versus != "copy/buffer" || math.Abs(r.Ratio-r.Value/rs[0].Value) > 1e-9*r.Ratio {
			t.Errorf("%s: ratio %g versus %q, want %g versus copy/buffer", r.Name, r.Ratio, r.Versus, r.Value/rs[0].Value)
		}
	}
	if err := Stream(d, 0, time.Millisecond, nil, func(Result) {}); err == nil {
		t.Error("0 elements: no error")
	}
	// A choice measures copy/buffer and what it wants, nothing else.
	var ran []string
	if err := Stream(d, streamCols, time.Millisecond, func(name string) bool { return name == "stream/gelu-f16" },
		func(r Result) { ran = append(ran, r.Name) }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ran, []string{"copy/buffer", "stream/gelu-f16"}) {
		t.Errorf("wanting gelu-f16 measured %v", ran)
	}
}

// TestStreamForms runs the forms comparison on a few rows: every streaming
// kernel but copy/buffer, as forms/<name> beside the plain forms; a device
// not told to run the plain forms is refused.
func TestStreamForms(t *testing.T) {
	d := devtest.Open(t)
	p := devtest.Open(t, vk.Options{PlainForms: true})
	var rs []Result
	if err := StreamForms(d, p, streamCols, time.Millisecond, nil, func(r Result) { rs = append(rs, r) }); err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(StreamNames)-1 {
		t.Fatalf("%d results, want %d", len(rs), len(StreamNames)-1)
	}
	for i, r := range rs {
		want := "forms/" + strings.TrimPrefix(StreamNames[i+1], "stream/")
		if r.Name != want || r.Versus != "plain forms" || !(r.Value > 0) || !(r.Ratio > 0) || math.IsInf(r.Ratio, 0) {
			t.Errorf("result %d: %+v, want %s beside the plain forms", i, r, want)
		}
	}
	if err := StreamForms(d, d, streamCols, time.Millisecond, nil, func(Result) {}); err == nil {
		t.Error("a device with its own forms as the plain one: no error")
	}
}

func TestFastest(t *testing.T) {
	var calls [2]int
	best, err := fastest(time.Millisecond, []func() error{
		func() error { calls[0]++; time.Sleep(2 * time.Millisecond); return nil },
		func() error { calls[1]++; return nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	// One warm-up call and at least three rounds, taking turns.
	if calls[0] < 4 || calls[0] != calls[1] {
		t.Errorf("calls %v: want as many of each, at least 4", calls)
	}
	if best[0] < 2*time.Millisecond || best[1] <= 0 {
		t.Errorf("fastest %v: the first sleeps 2ms", best)
	}
	boom := errors.New("boom")
	n := 0
	if _, err := fastest(time.Millisecond, []func() error{func() error {
		if n++; n == 3 {
			return boom
		}
		return nil
	}}); !errors.Is(err, boom) {
		t.Errorf("error %v, want %v", err, boom)
	}
}

func TestFastestHost(t *testing.T) {
	r, err := fastestHost([]hostSample{
		{host: 300 * time.Microsecond, dispatches: 30, copies: 2},
		{host: 100 * time.Microsecond, dispatches: 30, held: 1}, // waited: not counted
		{host: 200 * time.Microsecond, dispatches: 40, copies: 3},
		{host: 10 * time.Microsecond}, // dispatched nothing
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.Host != 200*time.Microsecond || r.Dispatches != 40 || r.Copies != 3 || r.Samples != 4 || r.Discarded != 2 {
		t.Errorf("report %+v: want the 200us step of 40 dispatches, 2 of 4 discarded", r)
	}
	if got := r.PerDispatch(); got != 5*time.Microsecond {
		t.Errorf("per dispatch %v, want 5us", got)
	}
	if _, err := fastestHost([]hostSample{{host: time.Millisecond, dispatches: 3, held: 2}}); err == nil {
		t.Error("only waiting steps: no error")
	}
}

// TestTrainSteps runs the step comparison and host measurement briefly, with
// a small GPT: the CPU recipe's took 5 minutes on SwiftShader.
func TestTrainSteps(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	rs, err := TrainSteps(d, train, test, GPTSize{Layers: 2, Heads: 2, Dim: 32, Block: 16, Batch: 4}, 64, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Result{}
	for _, r := range rs {
		byName[r.Name] = r
		if !(r.Value > 0) || math.IsInf(r.Value, 0) {
			t.Errorf("%s: %g, want positive", r.Name, r.Value)
		}
	}
	amp, fp32, ratio := byName["train-step/amp/64"], byName["train-step/fp32/64"], byName["train-step/amp-vs-fp32"]
	if math.Abs(ratio.Value-fp32.Value/amp.Value) > 1e-6*ratio.Value {
		t.Errorf("amp-vs-fp32 %g, want fp32 %g over AMP %g", ratio.Value, fp32.Value, amp.Value)
	}
	replay, rratio := byName["train-step/amp-replay/64"], byName["train-step/amp-replay-vs-amp"]
	if math.Abs(rratio.Value-amp.Value/replay.Value) > 1e-6*rratio.Value {
		t.Errorf("amp-replay-vs-amp %g, want AMP %g over replayed %g", rratio.Value, amp.Value, replay.Value)
	}
	h, err := HostPerDispatch(d, train, test, StepOptions{Batch: 64, Steps: 2, Warmup: 2})
	if err != nil {
		t.Fatal(err)
	}
	if h.Samples != 2 || h.Dispatches < 10 || h.Host <= 0 {
		t.Errorf("host report %+v: want 2 samples of a step's dispatches", h)
	}
	if _, ok := byName["dispatch/host-us"]; !ok {
		t.Error("no dispatch/host-us")
	}
	for _, name := range []string{"dispatch/replay-us", "dispatch/replay-us/gpt", "dispatch/host-us/gpt"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
}
