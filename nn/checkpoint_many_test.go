package nn_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/checkpoint"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// TestCheckpointVersions runs the tests of checkpoints with several
// optimizers, of retention and of older formats on one device.
func TestCheckpointVersions(t *testing.T) {
	d := devtest.Open(t)
	t.Run("NoOptimizer", func(t *testing.T) { checkpointNoOptimizer(t, d) })
	t.Run("TwoOptimizers", func(t *testing.T) { checkpointTwoOptimizers(t, d) })
	t.Run("Retention", func(t *testing.T) { checkpointRetention(t, d) })
	t.Run("NoOrphans", func(t *testing.T) { checkpointNoOrphans(t, d) })
	t.Run("Format1", func(t *testing.T) { checkpointFormat1(t, d) })
}

// paramValues reads every parameter.
func paramValues(t *testing.T, ps []*nn.Param) [][]float32 {
	t.Helper()
	var vs [][]float32
	for _, p := range ps {
		vs = append(vs, tRead(t, p.Value))
	}
	return vs
}

func sameValues(t *testing.T, what string, got, want [][]float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d tensors, want %d", what, len(got), len(want))
	}
	for i := range got {
		tSameBits(t, fmt.Sprintf("%s: tensor %d", what, i), got[i], want[i])
	}
}

// A checkpoint of parameters alone: saved with no optimizer (it crashed
// with a nil pointer and left an orphan version), loaded with none, and
// an error, changing nothing, when an optimizer is asked for.
func checkpointNoOptimizer(t *testing.T, d *vk.Device) {
	dir := t.TempDir()
	a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	a.train(1)
	if err := nn.SaveCheckpoint(dir, a.params, map[string]json.RawMessage{"epoch": json.RawMessage("2")}); err != nil {
		t.Fatal(err)
	}
	b := newRig(t, d, 2, "fc", 3, adamMaker(otherAdam))
	extra, err := nn.LoadCheckpoint(dir, b.params)
	if err != nil {
		t.Fatal(err)
	}
	sameValues(t, "loaded", paramValues(t, b.params), paramValues(t, a.params))
	if string(extra["epoch"]) != "2" {
		t.Errorf("extra epoch %s, want 2", extra["epoch"])
	}

	c := newRig(t, d, 3, "fc", 3, adamMaker(otherAdam))
	before := c.state()
	_, err = nn.LoadCheckpoint(dir, c.params, c.opt)
	tContains(t, "load with an optimizer", fmt.Sprint(err), "holds 0 optimizers, 1 given")
	sameState(t, "load with an optimizer", c.state(), before)

	// And the other way: a checkpoint with one optimizer, loaded with none.
	if err := nn.SaveCheckpoint(dir, a.params, nil, a.opt); err != nil {
		t.Fatal(err)
	}
	_, err = nn.LoadCheckpoint(dir, c.params)
	tContains(t, "load without an optimizer", fmt.Sprint(err), "holds 1 optimizer, 0 given")
	sameState(t, "load without an optimizer", c.state(), before)
}

// Two models with two optimizers (Adam and SGD with momentum) in one
// checkpoint come back in order; in the wrong order or number they give an
// error that changes nothing.
func checkpointTwoOptimizers(t *testing.T, d *vk.Device) {
	dir := t.TempDir()
	sgd := nn.SGDOptions{LR: 0.1, Momentum: 0.9}
	enc := newRig(t, d, 1, "enc", 3, adamMaker(ckptAdam))
	dec := newRig(t, d, 2, "dec", 5, sgdMaker(sgd))
	enc.train(2)
	dec.train(1)
	params := slices.Concat(enc.params, dec.params)
	if err := nn.SaveCheckpoint(dir, params, nil, enc.opt, dec.opt); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, filepath.Join(dir, "step-1")); !slices.Equal(names, []string{"model.safetensors", "optimizer-0.safetensors", "optimizer-1.safetensors", "state.json"}) {
		t.Errorf("version holds %v", names)
	}

	enc2 := newRig(t, d, 3, "enc", 3, adamMaker(otherAdam))
	dec2 := newRig(t, d, 4, "dec", 5, sgdMaker(nn.SGDOptions{LR: 0.3, Momentum: 0.5}))
	params2 := slices.Concat(enc2.params, dec2.params)
	encBefore, decBefore := enc2.state(), dec2.state()
	for _, c := range []struct {
		name   string
		opts   []nn.Stateful
		naming []string
	}{
		{"swapped", []nn.Stateful{dec2.opt, enc2.opt}, []string{"optimizer 0", "adam in the checkpoint, sgd given"}},
		{"one of two", []nn.Stateful{enc2.opt}, []string{"holds 2 optimizers, 1 given"}},
		{"three of two", []nn.Stateful{enc2.opt, dec2.opt, newRig(t, d, 5, "x", 3, adamMaker(otherAdam)).opt}, []string{"holds 2 optimizers, 3 given"}},
	} {
		_, err := nn.LoadCheckpoint(dir, params2, c.opts...)
		tContains(t, c.name, fmt.Sprint(err), c.naming...)
		sameState(t, c.name+": encoder", enc2.state(), encBefore)
		sameState(t, c.name+": decoder", dec2.state(), decBefore)
		if enc2.opt.LR() != otherAdam.LR || dec2.opt.LR() != 0.3 {
			t.Errorf("%s: learning rates changed to %g and %g", c.name, enc2.opt.LR(), dec2.opt.LR())
		}
	}

	msg := tPanics(t, "one optimizer given twice", func() { nn.LoadCheckpoint(dir, params2, enc2.opt, enc2.opt) })
	tContains(t, "one optimizer given twice", msg, "optimizer 1 is optimizer 0 again")
	if _, err := nn.LoadCheckpoint(dir, params2, enc2.opt, dec2.opt); err != nil {
		t.Fatal(err)
	}
	sameState(t, "encoder", enc2.state(), enc.state())
	sameState(t, "decoder", dec2.state(), dec.state())
	if enc2.opt.LR() != ckptAdam.LR || dec2.opt.LR() != sgd.LR {
		t.Errorf("learning rates %g and %g after load, want %g and %g", enc2.opt.LR(), dec2.opt.LR(), ckptAdam.LR, sgd.LR)
	}
	for _, r := range []*ckptRig{enc, dec, enc2, dec2} {
		r.train(2)
	}
	sameState(t, "encoder two steps after load", enc2.state(), enc.state())
	sameState(t, "decoder two steps after load", dec2.state(), dec.state())
}

// Each save keeps the newest CheckpointKeepLast versions (2 by default) and
// removes older ones only once LATEST names the new version.
func checkpointRetention(t *testing.T, d *vk.Device) {
	if nn.CheckpointKeepLast != 2 {
		t.Errorf("CheckpointKeepLast %d by default, the documentation says 2", nn.CheckpointKeepLast)
	}
	defer func(k int) { nn.CheckpointKeepLast = k }(nn.CheckpointKeepLast)
	a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	dir := t.TempDir()
	for _, c := range []struct {
		keep int
		want []string
	}{
		{2, []string{"LATEST", "step-1"}},
		{2, []string{"LATEST", "step-1", "step-2"}},
		{2, []string{"LATEST", "step-2", "step-3"}},
		{4, []string{"LATEST", "step-2", "step-3", "step-4"}},
		{4, []string{"LATEST", "step-2", "step-3", "step-4", "step-5"}},
		{1, []string{"LATEST", "step-6"}},
		{0, []string{"LATEST", "step-7"}}, // below 1 counts as 1
	} {
		nn.CheckpointKeepLast = c.keep
		a.train(1)
		if err := nn.SaveCheckpoint(dir, a.params, nil, a.opt); err != nil {
			t.Fatal(err)
		}
		if names := dirNames(t, dir); !slices.Equal(names, c.want) {
			t.Errorf("keep %d: directory holds %v, want %v", c.keep, names, c.want)
		}
	}

	// A failed save with KeepLast 1 removes nothing: the old version stays
	// the one LATEST names, and loads.
	nn.CheckpointKeepLast = 1
	saved := a.state()
	bad := failedParam(t, a.params[0].Name, 12)
	defer bad.Close()
	if err := nn.SaveCheckpoint(dir, append([]*nn.Param{bad}, a.params[1:]...), nil, a.opt); err == nil {
		t.Error("save of a failed parameter: no error")
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"LATEST", "step-7"}) {
		t.Errorf("after a failed save the directory holds %v, want LATEST and step-7", names)
	}
	b := newRig(t, d, 2, "fc", 3, adamMaker(otherAdam))
	if _, err := nn.LoadCheckpoint(dir, b.params, b.opt); err != nil {
		t.Fatal(err)
	}
	sameState(t, "loaded after a failed save", b.state(), saved)
}

// Every failed save leaves the directory as it was: no new version, no
// temporary file, nothing that was not there before.
func checkpointNoOrphans(t *testing.T, d *vk.Device) {
	for _, fresh := range []bool{false, true} {
		root := t.TempDir()
		dir := filepath.Join(root, "ckpt")
		a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
		a.train(1)
		if !fresh {
			if err := nn.SaveCheckpoint(dir, a.params, nil, a.opt); err != nil {
				t.Fatal(err)
			}
		}
		before := treeOf(t, root)

		lost := devtest.Open(t)
		l := newRig(t, lost, 1, "lost", 3, adamMaker(ckptAdam))
		loseDevice(t, lost)
		bad := failedParam(t, a.params[1].Name, 3)
		defer bad.Close()
		failing := map[string]func() error{
			"a failed parameter": func() error {
				return nn.SaveCheckpoint(dir, []*nn.Param{a.params[0], bad, a.params[2], a.params[3]}, nil, a.opt)
			},
			"a second optimizer on a lost device": func() error {
				return nn.SaveCheckpoint(dir, a.params, nil, a.opt, l.opt)
			},
			"an extra section that is not JSON": func() error {
				return nn.SaveCheckpoint(dir, a.params, map[string]json.RawMessage{"x": json.RawMessage("{")}, a.opt)
			},
		}
		for name, save := range failing {
			if err := save(); err == nil {
				t.Errorf("fresh=%v, %s: no error", fresh, name)
			}
			if after := treeOf(t, root); !slices.Equal(after, before) {
				t.Errorf("fresh=%v, %s: files\n%v\nafter a failed save, want\n%v", fresh, name, after, before)
			}
		}
	}
}

// treeOf lists every file and directory under root, sorted.
func treeOf(t *testing.T, root string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(root, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		names = append(names, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(names)
	return names
}

// writeFormat1 writes the checkpoint an earlier vkamp wrote (format 1, not
// recorded): one optimizer in optimizer.safetensors, its step count and
// settings in state.json, no checksums.
func writeFormat1(t *testing.T, dir string, r *ckptRig, settings any) {
	t.Helper()
	vdir := filepath.Join(dir, "step-3")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		t.Fatal(err)
	}
	var model, moments []checkpoint.Named
	for _, p := range r.params {
		model = append(model, checkpoint.Named{Name: p.Name, T: p.Value})
	}
	m1, m2 := nn.Moments(r.opt)
	for m, ms := range [][]*tensor.Tensor{m1, m2} {
		for i, x := range ms {
			if x != nil {
				moments = append(moments, checkpoint.Named{Name: r.params[i].Name + [...]string{".m1", ".m2"}[m], T: x})
			}
		}
	}
	steps, err := r.opt.Steps()
	if err != nil {
		t.Fatal(err)
	}
	hyper, _ := json.Marshal(settings)
	st := map[string]any{"version": 3, "optimizer_steps": steps, "optimizer": json.RawMessage(hyper),
		"extra": map[string]any{"epoch": 4}}
	for _, err := range []error{
		checkpoint.Save(filepath.Join(vdir, "model.safetensors"), model, nil),
		checkpoint.Save(filepath.Join(vdir, "optimizer.safetensors"), moments, nil),
		checkpoint.SaveJSON(filepath.Join(vdir, "state.json"), st),
		checkpoint.WriteFile(filepath.Join(dir, "LATEST"), []byte("step-3\n")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// A checkpoint of the earlier format loads (it has no checksums to verify),
// and the next save continues its numbering in the current format.
func checkpointFormat1(t *testing.T, d *vk.Device) {
	dir := t.TempDir()
	a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	a.train(2)
	writeFormat1(t, dir, a, ckptAdam)

	b := newRig(t, d, 2, "fc", 3, adamMaker(otherAdam))
	extra, err := nn.LoadCheckpoint(dir, b.params, b.opt)
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "format 1", b.state(), a.state())
	if b.opt.LR() != ckptAdam.LR || string(extra["epoch"]) != "4" {
		t.Errorf("format 1: LR %g, epoch %s; want %g, 4", b.opt.LR(), extra["epoch"], ckptAdam.LR)
	}
	c := newRig(t, d, 2, "fc", 3, adamMaker(otherAdam))
	if _, err := nn.LoadCheckpoint(dir, c.params); err == nil || !strings.Contains(err.Error(), "holds 1 optimizer, 0 given") {
		t.Errorf("format 1 without its optimizer: %v", err)
	}

	if err := nn.SaveCheckpoint(dir, b.params, nil, b.opt); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"LATEST", "step-3", "step-4"}) {
		t.Errorf("after a save over format 1 the directory holds %v", names)
	}

	// A format from a later vkamp is refused by name.
	err = editState(func(st map[string]any) {
		if st["format"] != 2.0 {
			t.Errorf("state.json of format %v, want 2", st["format"])
		}
		st["format"] = 3
	})(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = nn.LoadCheckpoint(dir, c.params, c.opt)
	if err == nil || !strings.Contains(err.Error(), "format 3") || errors.Is(err, nn.ErrNoCheckpoint) {
		t.Errorf("a later format: %v, want an error naming it", err)
	}
}
