package main

import (
	"fmt"
	"regexp"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/tools/internal/bench"
)

// selection is -run: a result is printed when its name matches, and a group
// of measurements runs only when one of the names it emits could match.
// Conv2d and the deterministic mode's measurements, whose names depend on
// their shapes, run when the pattern matches "conv2d" or "deterministic".
type selection struct{ re *regexp.Regexp } // nil: everything

func newSelection(pattern string) (selection, error) {
	if pattern == "" {
		return selection{}, nil
	}
	re, err := regexp.Compile(pattern)
	return selection{re}, err
}

func (s selection) match(name string) bool { return s.re == nil || s.re.MatchString(name) }

func (s selection) any(names []string) bool {
	for _, n := range names {
		if s.match(n) {
			return true
		}
	}
	return false
}

func matmulNames(sizes []int) []string {
	var out []string
	for _, n := range sizes {
		out = append(out, fmt.Sprintf("matmul/gonum-f32/%d", n))
		for _, dt := range []tensor.DType{tensor.Float16, tensor.Float32, tensor.BFloat16} {
			out = append(out, fmt.Sprintf("matmul/%s/%d", dt, n))
		}
	}
	return out
}

func thinNames(ms []int) []string {
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("matmul-thin/gonum-f32/%dx1024", m), fmt.Sprintf("matmul-thin/float16/%dx1024", m))
	}
	return out
}

// trainNames are the training-step results of bench.Run beside the host
// time's (hostNames).
func trainNames() []string {
	var out []string
	for _, n := range []string{"train-step/fp16-amp", "train-step/fp32"} {
		out = append(out, n, n+"/submits", n+"/waits", n+"/stalls")
	}
	return append(out, "train-step/amp/64", "train-step/fp32/64", "train-step/amp-vs-fp32")
}

func hostNames() []string {
	return append([]string{"dispatch/host-us", "dispatch/replay-us", "dispatch/replay-vs-record", "dispatch/host-us/gpt", "dispatch/replay-us/gpt", "dispatch/replay-vs-record/gpt"}, bench.DriverNames...)
}

func stepShareNames(batch int) []string {
	var out []string
	for _, r := range bench.StepResults(bench.StepReport{Batch: batch}) {
		out = append(out, r.Name)
	}
	return out
}
