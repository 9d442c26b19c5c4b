package main

import (
	"slices"
	"testing"

	"github.com/vkamp/vkamp/tools/internal/bench"
)

func TestSelection(t *testing.T) {
	all, err := newSelection("")
	if err != nil || !all.match("anything") {
		t.Fatalf("empty pattern: %v, want everything chosen", err)
	}
	if _, err := newSelection("("); err == nil {
		t.Error("bad pattern accepted")
	}
	host, _ := newSelection("host-us")
	for _, c := range []struct {
		names []string
		want  bool
	}{
		{hostNames(), true},
		{trainNames(), false},
		{matmulNames([]int{256}), false},
		{bench.StreamNames, false},
		{stepShareNames(64), false},
	} {
		if got := host.any(c.names); got != c.want {
			t.Errorf("host-us chooses %v: %v, want %v", c.names, got, c.want)
		}
	}
	mm, _ := newSelection("^matmul/float16/512$")
	if !mm.any(matmulNames([]int{256, 512})) || mm.any(matmulNames([]int{256})) || mm.any(thinNames([]int{8})) {
		t.Error("^matmul/float16/512$: wrong groups chosen")
	}
	share, _ := newSelection("step-share/.*/256/barriers")
	if !share.any(stepShareNames(256)) || share.any(stepShareNames(64)) {
		t.Errorf("step-share names %v: wrong batch chosen", stepShareNames(256))
	}
	if !slices.Contains(stepShareNames(64), "step-share/fp16-amp/64") {
		t.Errorf("step-share names %v lack the share itself", stepShareNames(64))
	}
}
