package nn_test

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/vkamp/vkamp/checkpoint"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
)

// TestCheckpointFrozenMoments: the moments of a parameter frozen since the
// optimizer was made, which no step wrote, are left out of a checkpoint,
// as PyTorch's optimizer state has no entry for a parameter it never
// stepped; a parameter trained, then frozen, keeps its moments. Loaded
// into an optimizer that had stepped the frozen layer, the left-out
// moments become zeros, and after unfreezing both runs take the same
// next step, bit for bit.
func TestCheckpointFrozenMoments(t *testing.T) {
	d := devtest.Open(t)
	dir := t.TempDir()
	a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	nn.Freeze(a.model[0])
	a.train(3)
	if err := nn.SaveCheckpoint(dir, a.params, nil, a.opt); err != nil {
		t.Fatal(err)
	}
	names := momentNames(t, dir)
	want := []string{"fc2.bias.m1", "fc2.bias.m2", "fc2.weight.m1", "fc2.weight.m2"}
	if !slices.Equal(names, want) {
		t.Fatalf("optimizer file holds %v, want the trained layer's moments alone %v", names, want)
	}

	b := newRig(t, d, 2, "fc", 3, adamMaker(ckptAdam))
	b.train(2) // fc1's moments are not zero here
	if _, err := nn.LoadCheckpoint(dir, b.params, b.opt); err != nil {
		t.Fatal(err)
	}
	sameState(t, "loaded", b.state(), a.state())
	nn.Unfreeze(a.model[0])
	a.train(1)
	b.train(1)
	sameState(t, "a step after unfreezing", b.state(), a.state())

	// Trained, then frozen: its moments are kept.
	nn.Freeze(a.model[0])
	a.train(1)
	if err := nn.SaveCheckpoint(dir, a.params, nil, a.opt); err != nil {
		t.Fatal(err)
	}
	if names := momentNames(t, dir); len(names) != 8 {
		t.Errorf("after fc1 was trained and frozen: %v, want all 8 moments", names)
	}
}

// momentNames lists the tensors of the latest checkpoint's optimizer file.
func momentNames(t *testing.T, dir string) []string {
	t.Helper()
	var latest string
	for _, n := range dirNames(t, dir) {
		if n != "LATEST" {
			latest = n // step-N, the last in order for these few
		}
	}
	f, err := checkpoint.Read(filepath.Join(dir, latest, "optimizer-0.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range f.Tensors {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
