package trainer_test

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/tools/internal/trainer"
	"github.com/vkamp/vkamp/vk"
)

// detWeights is the sha256 of the MLP's weights after TestDeterministic's
// steps, the same on every driver and tier (lavapipe at each tier and
// SwiftShader agreed when it was recorded). A kernel change that moves it
// must move it on every driver alike: rerun the test on each and update.
var detWeights = map[string]string{
	"fp16": "c66c29fa1b1a8b141f1f243766f49f06e63ebe8069256e925bc689723a8082aa",
	"fp32": "766911967caf880605252cba50cdf9014e13a6029dc30b6690256bb6fd07829f",
}

// TestDeterministic trains a few steps of the MNIST MLP in deterministic
// mode and compares a hash of the weights with the one every driver and
// tier must give. scripts/check-deterministic.sh does the same for a whole
// epoch of tools/train across the drivers and tiers of a machine.
func TestDeterministic(t *testing.T) {
	d := devtest.Open(t, vk.Options{Deterministic: true})
	train, test := load(t)
	for _, c := range []struct {
		name string
		fp16 bool
	}{{"fp16", true}, {"fp32", false}} {
		tr := newTrainer(t, trainer.Options{Device: d, Train: train.Subset(640), Test: test.Subset(100), Batch: 64, FP16: c.fp16, Seed: 1})
		e := epoch(t, tr)
		h := sha256.New()
		for _, w := range readAll(t, tr.Params()) {
			for _, v := range w {
				h.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(v)))
			}
		}
		got := hex.EncodeToString(h.Sum(nil))
		t.Logf("%s on %s (tier %s): weights sha256 %s, loss %.6f", c.name, d.Info().Name, d.Tier(), got, e.TrainLoss)
		if want := detWeights[c.name]; got != want {
			t.Errorf("%s: weights sha256 %s, want %s (the other drivers' and tiers')", c.name, got, want)
		}
	}
}
