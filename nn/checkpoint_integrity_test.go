package nn_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vkamp/vkamp/checkpoint"
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
	t.Run("Checksums", func(t *testing.T) { checkpointChecksums(t, d) })
	t.Run("NonFiniteLoad", func(t *testing.T) { checkpointNonFiniteLoad(t, d) })
	t.Run("Locked", func(t *testing.T) { checkpointLocked(t, d) })
	t.Run("Leftovers", func(t *testing.T) { checkpointLeftovers(t, d) })
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

// Every file of a version is checked against the checksum the version
// recorded: a flipped bit, or a NaN written over a weight, is an error
// naming the file, and nothing is loaded.
func checkpointChecksums(t *testing.T, d *vk.Device) {
	a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	a.train(1)
	good := t.TempDir()
	if err := nn.SaveCheckpoint(good, a.params, nil, a.opt); err != nil {
		t.Fatal(err)
	}
	// edit changes the file's bytes in place, keeping its size.
	edit := func(name string, f func(b []byte)) func(dir string) error {
		return func(dir string) error {
			p := filepath.Join(dir, "step-1", name)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			f(b)
			return os.WriteFile(p, b, 0o644)
		}
	}
	nanAt := func(off int) func(b []byte) {
		return func(b []byte) {
			binary.LittleEndian.PutUint32(b[len(b)-off:], math.Float32bits(float32(math.NaN())))
		}
	}
	for i, c := range []struct {
		name, file string
		corrupt    func(dir string) error
	}{
		{"a bit of a weight flipped", "model.safetensors", edit("model.safetensors", func(b []byte) { b[len(b)-5] ^= 0x01 })},
		{"a NaN over a weight", "model.safetensors", edit("model.safetensors", nanAt(4))},
		{"a bit of the header flipped", "model.safetensors", edit("model.safetensors", func(b []byte) { b[20] ^= 0x20 })},
		{"a bit of a moment flipped", "optimizer-0.safetensors", edit("optimizer-0.safetensors", func(b []byte) { b[len(b)-9] ^= 0x80 })},
		{"a digit of the step count changed", "state.json", edit("state.json", func(b []byte) {
			copy(b[bytes.Index(b, []byte(`"steps": 1`)):], `"steps": 3`)
		})},
	} {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(good)); err != nil {
			t.Fatal(err)
		}
		if err := c.corrupt(dir); err != nil {
			t.Fatal(err)
		}
		b := newRig(t, d, 2, "fc", 3, adamMaker(otherAdam))
		before := b.state()
		_, err := nn.LoadCheckpoint(dir, b.params, b.opt)
		if i == 0 {
			t.Logf("flipped bit: %v", err)
		}
		if !errors.Is(err, checkpoint.ErrChecksum) {
			t.Errorf("case %d (%s): %v, want a checksum error", i, c.name, err)
		}
		tContains(t, fmt.Sprintf("case %d (%s)", i, c.name), fmt.Sprint(err), filepath.Join(dir, "step-1", c.file), "sha256")
		sameState(t, fmt.Sprintf("case %d (%s)", i, c.name), b.state(), before)
	}

	// The checksums are in state.json and LATEST, for every file.
	latest, err := os.ReadFile(filepath.Join(good, "LATEST"))
	if err != nil || !strings.HasPrefix(string(latest), "step-1\nstate.json sha256:") {
		t.Errorf("LATEST holds %q (%v)", latest, err)
	}
	var st struct{ Files map[string]string }
	if err := checkpoint.LoadJSON(filepath.Join(good, "step-1", "state.json"), &st); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"model.safetensors", "optimizer-0.safetensors"} {
		raw, err := os.ReadFile(filepath.Join(good, "step-1", name))
		if err != nil {
			t.Fatal(err)
		}
		if st.Files[name] != checkpoint.Sum(raw) {
			t.Errorf("state.json records %q for %s, want %q", st.Files[name], name, checkpoint.Sum(raw))
		}
	}
}

// A checkpoint whose weights or moments hold NaN or inf (one of format 1,
// which has no checksums, or one whose checksums were made to match) is
// refused on load, naming the file and the tensor.
func checkpointNonFiniteLoad(t *testing.T, d *vk.Device) {
	a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	a.train(1)
	poison(t, a.params[2].Value, map[int]float32{1: float32(math.Inf(-1))})
	dir := t.TempDir()
	writeFormat1(t, dir, a, ckptAdam)
	b := newRig(t, d, 2, "fc", 3, adamMaker(otherAdam))
	before := b.state()
	_, err := nn.LoadCheckpoint(dir, b.params, b.opt)
	t.Logf("format 1 with an inf: %v", err)
	tContains(t, "format 1 with an inf", fmt.Sprint(err), "model.safetensors", `"fc2.weight" holds 0 NaN and 1 inf of its 6 values`, "refused")
	sameState(t, "format 1 with an inf", b.state(), before)

	// Format 2, the NaN in a moment, the checksums remade.
	dir = savedPoisoned(t, d, 0, map[int]float32{0: float32(math.NaN())})
	_, err = nn.LoadCheckpoint(dir, b.params, b.opt)
	t.Logf("format 2 with a NaN moment: %v", err)
	tContains(t, "format 2 with a NaN moment", fmt.Sprint(err), "optimizer 0", "optimizer-0.safetensors", `"fc1.weight.m1" holds 1 NaN and 0 inf of its 12 values`)
	sameState(t, "format 2 with a NaN moment", b.state(), before)

	// A negative second moment (the checksums remade): its square root
	// would make the weight NaN at the next step. A negative first moment
	// is fine.
	for _, moment := range []int{1, 0} {
		dir = savedPoisoned(t, d, moment, map[int]float32{2: -5})
		_, err = nn.LoadCheckpoint(dir, b.params, b.opt)
		t.Logf("format 2, moment %d with a -5: %v", moment+1, err)
		if moment == 1 {
			var ne *checkpoint.NegativeError
			if !errors.As(err, &ne) {
				t.Errorf("a negative second moment: got %v, want a *checkpoint.NegativeError", err)
			}
			tContains(t, "a negative second moment", fmt.Sprint(err), "optimizer-0.safetensors", `"fc1.weight.m2" holds 1 negative values of its 12`)
			sameState(t, "a negative second moment", b.state(), before)
		} else if err != nil {
			t.Errorf("a negative first moment: %v", err)
		}
	}
}

// savedPoisoned saves a checkpoint of a trained Adam rig, then rewrites its
// optimizer file with values set in the first tensor of moment m (0 or 1)
// and remakes the state's checksum to match, and returns its directory.
func savedPoisoned(t *testing.T, d *vk.Device, m int, values map[int]float32) string {
	t.Helper()
	r := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	r.train(1)
	dir := t.TempDir()
	if err := nn.SaveCheckpoint(dir, r.params, nil, r.opt); err != nil {
		t.Fatal(err)
	}
	m1, m2 := nn.Moments(r.opt)
	poison(t, [][]*tensor.Tensor{m1, m2}[m][0], values)
	mom := filepath.Join(dir, "step-1", "optimizer-0.safetensors")
	if err := checkpoint.Save(mom, nn.StateTensors(r.opt), nil); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(mom)
	if err != nil {
		t.Fatal(err)
	}
	if err := editState(func(st map[string]any) {
		st["files"].(map[string]any)["optimizer-0.safetensors"] = checkpoint.Sum(raw)
	})(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A save into a directory whose lock another writer holds fails with an
// error naming the holder, and changes nothing.
func checkpointLocked(t *testing.T, d *vk.Device) {
	root := t.TempDir()
	dir := filepath.Join(root, "ckpt")
	a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	if err := nn.SaveCheckpoint(dir, a.params, nil, a.opt); err != nil {
		t.Fatal(err)
	}
	l, err := checkpoint.LockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, root)
	a.train(1)
	err = nn.SaveCheckpoint(dir, a.params, nil, a.opt)
	t.Logf("locked: %v", err)
	var le *checkpoint.LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() {
		t.Errorf("save into a locked directory: %v, want a *checkpoint.LockedError naming this process", err)
	}
	tContains(t, "locked", fmt.Sprint(err), fmt.Sprintf("held by pid %d on host", os.Getpid()))
	if after := treeOf(t, root); !slices.Equal(after, before) {
		t.Errorf("files\n%v\nafter a locked save, want\n%v", after, before)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if err := nn.SaveCheckpoint(dir, a.params, nil, a.opt); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"LATEST", "step-1", "step-2"}) {
		t.Errorf("directory holds %v", names)
	}
}

// TestCheckpointWriterProcess is not a test: run by TestCheckpointTwoWriters
// as one of two processes, it saves a model into the directory
// NN_TEST_CKPT_WRITER names again and again, and exits 1 on any error but
// the other writer's lock.
func TestCheckpointWriterProcess(t *testing.T) {
	dir := os.Getenv("NN_TEST_CKPT_WRITER")
	if dir == "" {
		return
	}
	d := devtest.Open(t)
	a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	saved, locked := 0, 0
	for i := range 25 {
		a.train(1)
		err := nn.SaveCheckpoint(dir, a.params, map[string]json.RawMessage{"i": json.RawMessage(fmt.Sprint(i))}, a.opt)
		var le *checkpoint.LockedError
		switch {
		case errors.As(err, &le):
			locked++
		case err != nil:
			fmt.Printf("save %d: %v\n", i, err)
			os.Exit(1)
		default:
			saved++
		}
		time.Sleep(time.Millisecond) // let the other writer in
	}
	fmt.Printf("saved %d, locked out %d\n", saved, locked)
	os.Exit(0)
}

// TestCheckpointTwoWriters: two processes saving into one directory at
// once. Each save succeeds or is refused for the other's lock, and the
// directory ends with a loadable checkpoint and nothing else.
func TestCheckpointTwoWriters(t *testing.T) {
	d := devtest.Open(t)
	dir := filepath.Join(t.TempDir(), "ckpt")
	var cmds []*exec.Cmd
	var outs []*strings.Builder
	for range 2 {
		cmd := devtest.Self("-test.run=^TestCheckpointWriterProcess$")
		cmd.Env = append(os.Environ(), "NN_TEST_CKPT_WRITER="+dir)
		out := &strings.Builder{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		err := cmd.Wait()
		t.Logf("writer %d: %v: %s", i, err, strings.TrimSpace(outs[i].String()))
		if err != nil {
			t.Errorf("writer %d failed: %v", i, err)
		}
		// A writer that skipped (no device) prints no count: that is no test.
		if !strings.Contains(outs[i].String(), "saved ") {
			t.Errorf("writer %d saved nothing: %s", i, outs[i].String())
		}
	}
	names := dirNames(t, dir)
	if len(names) != 3 || names[0] != "LATEST" || !strings.HasPrefix(names[1], "step-") {
		t.Errorf("directory holds %v, want LATEST and two versions", names)
	}
	b := newRig(t, d, 2, "fc", 3, adamMaker(otherAdam))
	if _, err := nn.LoadCheckpoint(dir, b.params, b.opt); err != nil {
		t.Error(err)
	}
}

// A save removes what crashed saves left: temporary files (.LATEST.tmp-*
// and those of a version's files) and versions newer than LATEST's. It
// keeps the files of others, and with LATEST unreadable it removes no
// version, numbering the new one after the newest.
func checkpointLeftovers(t *testing.T, d *vk.Device) {
	dir := t.TempDir()
	a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	a.train(1)
	if err := nn.SaveCheckpoint(dir, a.params, nil, a.opt); err != nil {
		t.Fatal(err)
	}
	write := func(name string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{".LATEST.tmp-123", ".LATEST.tmp-4567", "step-1/.state.json.tmp-9",
		"step-2/.model.safetensors.tmp-5", "step-3/model.safetensors", "notes.txt", ".notes.txt.tmp-1"} {
		write(name)
	}
	if err := nn.SaveCheckpoint(dir, a.params, nil, a.opt); err != nil {
		t.Fatal(err)
	}
	want := []string{".", ".notes.txt.tmp-1", "LATEST", "notes.txt",
		"step-1", "step-1/model.safetensors", "step-1/optimizer-0.safetensors", "step-1/state.json",
		"step-2", "step-2/model.safetensors", "step-2/optimizer-0.safetensors", "step-2/state.json"}
	if got := treeOf(t, dir); !slices.Equal(got, want) {
		t.Errorf("after a save over leftovers:\n%v\nwant\n%v", got, want)
	}

	// LATEST unreadable: the new version is step-3, and none is removed
	// but by retention.
	if err := os.WriteFile(filepath.Join(dir, "LATEST"), []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := nn.SaveCheckpoint(dir, a.params, nil, a.opt); err != nil {
		t.Fatal(err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{".notes.txt.tmp-1", "LATEST", "notes.txt", "step-2", "step-3"}) {
		t.Errorf("after a save over a garbage LATEST: %v", names)
	}
	b := newRig(t, d, 2, "fc", 3, adamMaker(otherAdam))
	if _, err := nn.LoadCheckpoint(dir, b.params, b.opt); err != nil {
		t.Fatal(err)
	}
	sameState(t, "loaded", b.state(), a.state())
}
