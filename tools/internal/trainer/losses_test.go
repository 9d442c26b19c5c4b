package trainer_test

import (
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tools/internal/trainer"
)

// TestLossEveryAcrossEpochs: with epochs of 5 steps and a loss read every
// 2, each loss OnStep reports is the step's real loss, also in the second
// epoch, where the run's step count (7) and the epoch's (2) disagree. (The
// trainer used to read on the run's count and report on the epoch's, so
// the progress line showed a loss of 0.)
func TestLossEveryAcrossEpochs(t *testing.T) {
	d := devtest.Open(t)
	train, test := load(t)
	var losses []float64
	tr := newTrainer(t, trainer.Options{Device: d, Train: train.Subset(80), Test: test.Subset(50), Batch: 16, Seed: 5,
		LossEvery: 2, OnStep: func(s trainer.Step) {
			if s.Loss == s.Loss {
				losses = append(losses, s.Loss)
			}
		}})
	epoch(t, tr)
	epoch(t, tr)
	if len(losses) != 4 {
		t.Fatalf("%d losses reported in two epochs of 5 steps, want 4 (steps 2 and 4 of each)", len(losses))
	}
	for i, l := range losses {
		if !(l > 0.01) {
			t.Errorf("loss %d reported as %g: not the step's cross-entropy", i, l)
		}
	}
}
