package gpt

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestSampleGreedyAndTopOne(t *testing.T) {
	logits := []float32{0.5, 3, -1, 2.9}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 100 {
		if got := Sample(logits, 0, 0, rng); got != 1 {
			t.Fatalf("draw %d: temperature 0 gave %d, want the argmax 1", i, got)
		}
		if got := Sample(logits, 2, 1, rng); got != 1 {
			t.Fatalf("draw %d: top-k 1 gave %d, want the argmax 1", i, got)
		}
	}
}

// TestSampleFrequencies: with top-k 2 only the two largest logits are
// drawn, in the ratio of their softmax at the temperature; a seeded rng
// gives the same draws again.
func TestSampleFrequencies(t *testing.T) {
	logits := []float32{1, 0, 2, -3, 1.5}
	const n = 20000
	temp := 0.5
	draw := func() []int {
		rng := rand.New(rand.NewPCG(7, 7))
		counts := make([]int, len(logits))
		for range n {
			counts[Sample(logits, temp, 2, rng)]++
		}
		return counts
	}
	counts := draw()
	if counts[0]+counts[1]+counts[3] != 0 {
		t.Fatalf("top-k 2 drew outside the top two: %v", counts)
	}
	// p(2) / (p(2) + p(4)) = 1 / (1 + e^((1.5-2)/0.5)).
	want := 1 / (1 + math.Exp(-1))
	got := float64(counts[2]) / n
	if sd := math.Sqrt(want * (1 - want) / n); math.Abs(got-want) > 4*sd {
		t.Errorf("frequency of the top token %.4f, want %.4f ± %.4f", got, want, 4*sd)
	}
	again := draw()
	for i := range counts {
		if counts[i] != again[i] {
			t.Fatalf("seeded draws differ: %v and %v", counts, again)
		}
	}
	// Without top-k every token is drawn, even the rarest (p = 0.003 at
	// temperature 1: about 64 of 20,000 draws).
	rng := rand.New(rand.NewPCG(3, 3))
	all := make([]int, len(logits))
	for range n {
		all[Sample(logits, 1, 0, rng)]++
	}
	for i, c := range all {
		if c == 0 {
			t.Errorf("token %d never drawn without top-k: %v", i, all)
		}
	}
}

func TestSampleMisuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for name, f := range map[string]func(){
		"empty":                func() { Sample(nil, 1, 0, rng) },
		"negative temperature": func() { Sample([]float32{1}, -1, 0, rng) },
		"negative top-k":       func() { Sample([]float32{1}, 1, -1, rng) },
		"NaN logit":            func() { Sample([]float32{1, float32(math.NaN())}, 1, 0, rng) },
		"nil rng":              func() { Sample([]float32{1}, 1, 0, nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}
