package nn_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestCheckpointIntegrity runs the tests of what a checkpoint refuses to
// write or load on one device.
func TestCheckpointIntegrity(t *testing.T) {
	d := devtest.Open(t)
	t.Run("NonFiniteSave", func(t *testing.T) { checkpointNonFiniteSave(t, d) })
}

// poison writes vals into x at the indices given.
func poison(t *testing.T, x *tensor.Tensor, at map[int]float32) {
	t.Helper()
	raw, err := x.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range at {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	if err := x.SetBytes(raw); err != nil {
		t.Fatal(err)
	}
}

// A save of weights or moments holding a NaN or an infinity is refused
// with an error naming the first such tensor and the count, and leaves the
// directory as it was: the last good version stays the latest.
func checkpointNonFiniteSave(t *testing.T, d *vk.Device) {
	root := t.TempDir()
	dir := root + "/ckpt"
	a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	a.train(1)
	if err := nn.SaveCheckpoint(dir, a.params, nil, a.opt); err != nil {
		t.Fatal(err)
	}
	saved, before := a.state(), treeOf(t, root)

	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	// fc1.bias [3] gets one inf, fc2.weight [2 3] two NaNs and a -inf.
	poison(t, a.params[1].Value, map[int]float32{2: inf})
	poison(t, a.params[2].Value, map[int]float32{0: nan, 3: nan, 5: -inf})
	err := nn.SaveCheckpoint(dir, a.params, nil, a.opt)
	t.Logf("NaN weights: %v", err)
	tContains(t, "NaN weights", fmt.Sprint(err), "model.safetensors", `"fc1.bias" holds 0 NaN and 1 inf of its 3 values`,
		"2 of 4 tensors hold NaN or inf", "step-1 stays the latest version")
	if after := treeOf(t, root); !slices.Equal(after, before) {
		t.Errorf("files\n%v\nafter a refused save, want\n%v", after, before)
	}
	// Zero optimizers: the same.
	err = nn.SaveCheckpoint(dir, a.params, nil)
	tContains(t, "NaN weights, no optimizer", fmt.Sprint(err), `"fc1.bias" holds 0 NaN and 1 inf`)

	// Finite weights but a NaN moment.
	b := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	b.train(1)
	_, m2 := nn.Moments(b.opt)
	poison(t, m2[3], map[int]float32{1: nan})
	err = nn.SaveCheckpoint(dir, b.params, nil, b.opt)
	t.Logf("NaN moment: %v", err)
	tContains(t, "NaN moment", fmt.Sprint(err), "optimizer 0", "optimizer-0.safetensors", `"fc2.bias.m2" holds 1 NaN and 0 inf of its 2 values`)
	if after := treeOf(t, root); !slices.Equal(after, before) {
		t.Errorf("files\n%v\nafter a refused save, want\n%v", after, before)
	}

	c := newRig(t, d, 2, "fc", 3, adamMaker(otherAdam))
	if _, err := nn.LoadCheckpoint(dir, c.params, c.opt); err != nil {
		t.Fatal(err)
	}
	sameState(t, "loaded after refused saves", c.state(), saved)
}
