package nn_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vkamp/vkamp/checkpoint"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// ckptRig is a tiny model, its optimizer and fixed data.
type ckptRig struct {
	t      *testing.T
	d      *vk.Device
	model  nn.Sequential
	opt    optimizer
	x, y   *tensor.Tensor
	params []*nn.Param
}

// newRig returns a model Linear(4, out) -> ReLU -> Linear(out, 2) initialised
// from seed, named with prefix, and an optimizer made by mk.
func newRig(t *testing.T, d *vk.Device, seed uint64, prefix string, out int, mk func([]*nn.Param) (optimizer, error)) *ckptRig {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	model := nn.Sequential{nn.NewLinear(d, prefix+"1", 4, out, rng), nn.ReLU{}, nn.NewLinear(d, prefix+"2", out, 2, rng)}
	t.Cleanup(func() { nn.Close(model) })
	opt, err := mk(model.Parameters())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opt.Close() })
	return &ckptRig{t: t, d: d, model: model, opt: opt, params: model.Parameters(),
		x: tInput(t, d, tRand(6*4, 5, 1, f32), 6, 4), y: tInput(t, d, tRand(6*2, 6, 1, f32), 6, 2)}
}

func adamMaker(o nn.AdamOptions) func([]*nn.Param) (optimizer, error) {
	return func(ps []*nn.Param) (optimizer, error) { return nn.NewAdam(ps, o) }
}

func sgdMaker(o nn.SGDOptions) func([]*nn.Param) (optimizer, error) {
	return func(ps []*nn.Param) (optimizer, error) { return nn.NewSGD(ps, o) }
}

// train takes n steps on the rig's fixed data.
func (r *ckptRig) train(n int) {
	r.t.Helper()
	for i := 0; i < n; i++ {
		if err := r.opt.ZeroGrad(); err != nil {
			r.t.Fatal(err)
		}
		g := nn.NewGraph(r.d, nn.Options{})
		loss := g.MSELoss(r.model.Forward(g, g.Input(r.x)), g.Input(r.y), nn.Mean)
		if err := g.Backward(loss, nil); err != nil {
			r.t.Fatal(err)
		}
		if err := r.opt.Step(); err != nil {
			r.t.Fatal(err)
		}
		g.Release()
	}
}

// state returns every value of the model and optimizer, and the step count.
func (r *ckptRig) state() optSnapshot { return snapshot(r.t, r.opt, r.params) }

func sameState(t *testing.T, what string, got, want optSnapshot) {
	t.Helper()
	if got.steps != want.steps {
		t.Errorf("%s: %d steps, want %d", what, got.steps, want.steps)
	}
	if len(got.values) != len(want.values) {
		t.Fatalf("%s: %d tensors, want %d", what, len(got.values), len(want.values))
	}
	for i := range got.values {
		tSameBits(t, fmt.Sprintf("%s: tensor %d", what, i), got.values[i], want.values[i])
	}
}

// TestCheckpoint runs the checkpoint tests on one device: building the
// kernels once keeps them fast on SwiftShader.
func TestCheckpoint(t *testing.T) {
	d := devtest.Open(t)
	t.Run("RoundTrip", func(t *testing.T) { checkpointRoundTrip(t, d) })
	t.Run("Resume", func(t *testing.T) { checkpointResume(t, d) })
	t.Run("Mismatch", func(t *testing.T) { checkpointMismatch(t, d) })
	t.Run("Corrupt", func(t *testing.T) { checkpointCorrupt(t, d) })
	t.Run("FailedSave", func(t *testing.T) { checkpointFailedSave(t, d) })
}

var ckptAdam = nn.AdamOptions{LR: 0.01, Beta1: 0.8, Beta2: 0.99, Eps: 1e-6, WeightDecay: 0.1, Decoupled: true}

// otherAdam differs from ckptAdam in every hyperparameter: a load must
// replace all of them.
var otherAdam = nn.AdamOptions{LR: 0.5, Beta1: 0.5, Beta2: 0.9, Eps: 1e-3}

func checkpointRoundTrip(t *testing.T, d *vk.Device) {
	s, err := scaler.New(scaler.Options{InitScale: 512, GrowthInterval: 7})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sd, err := s.StateDict()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		save, add func([]*nn.Param) (optimizer, error)
	}{
		{"adam", adamMaker(ckptAdam), adamMaker(otherAdam)},
		{"sgd momentum", sgdMaker(nn.SGDOptions{LR: 0.1, Momentum: 0.9, Dampening: 0.1}), sgdMaker(nn.SGDOptions{LR: 0.3, Momentum: 0.5})},
		{"sgd", sgdMaker(nn.SGDOptions{LR: 0.1, WeightDecay: 0.01}), sgdMaker(nn.SGDOptions{LR: 0.3})},
		{"adadelta", adadeltaMaker(nn.AdadeltaOptions{LR: 0.7, Rho: 0.8, Eps: 1e-5, WeightDecay: 0.01}), adadeltaMaker(nn.AdadeltaOptions{})},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			a := newRig(t, d, 1, "fc", 3, c.save)
			a.train(2)
			extra := map[string]json.RawMessage{"scaler": sd, "epoch": json.RawMessage("3")}
			if err := nn.SaveCheckpoint(dir, a.params, extra, a.opt); err != nil {
				t.Fatal(err)
			}
			a.train(1)
			if err := nn.SaveCheckpoint(dir, a.params, extra, a.opt); err != nil {
				t.Fatal(err)
			}
			if names := dirNames(t, dir); !slices.Equal(names, []string{"LATEST", "step-1", "step-2"}) {
				t.Errorf("checkpoint directory holds %v, want LATEST, step-1 and step-2", names)
			}

			b := newRig(t, d, 2, "fc", 3, c.add)
			got, err := nn.LoadCheckpoint(dir, b.params, b.opt)
			if err != nil {
				t.Fatal(err)
			}
			sameState(t, "loaded", b.state(), a.state())
			if b.opt.LR() != a.opt.LR() {
				t.Errorf("LR %g after load, want %g", b.opt.LR(), a.opt.LR())
			}
			if string(got["epoch"]) != "3" {
				t.Errorf("extra section epoch = %s, want 3", got["epoch"])
			}
			s2, err := scaler.New(scaler.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if err := s2.LoadStateDict(got["scaler"]); err != nil {
				t.Fatal(err)
			}
			if v, err := s2.ScaleValue(); v != 512 || err != nil || s2.GrowthInterval() != 7 {
				t.Errorf("scaler after load: scale %g (%v), interval %d; want 512, 7", v, err, s2.GrowthInterval())
			}
			// The hyperparameters came back too: both continue alike.
			a.train(2)
			b.train(2)
			sameState(t, "two steps after load", b.state(), a.state())
		})
	}
}

// Training resumed from a checkpoint reaches the weights of an uninterrupted
// run, bit for bit.
func checkpointResume(t *testing.T, d *vk.Device) {
	for _, c := range []struct {
		name       string
		mk, fresh  func([]*nn.Param) (optimizer, error)
		first, all int
	}{
		{"adam", adamMaker(ckptAdam), adamMaker(otherAdam), 2, 5},
		{"sgd nesterov", sgdMaker(nn.SGDOptions{LR: 0.05, Momentum: 0.9, Nesterov: true}), sgdMaker(nn.SGDOptions{LR: 0.2, Momentum: 0.1}), 1, 4},
		{"adadelta", adadeltaMaker(nn.AdadeltaOptions{}), adadeltaMaker(nn.AdadeltaOptions{LR: 0.1}), 2, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			straight := newRig(t, d, 1, "fc", 3, c.mk)
			straight.train(c.all)

			dir := t.TempDir()
			before := newRig(t, d, 1, "fc", 3, c.mk)
			before.train(c.first)
			if err := nn.SaveCheckpoint(dir, before.params, nil, before.opt); err != nil {
				t.Fatal(err)
			}
			after := newRig(t, d, 9, "fc", 3, c.fresh)
			if _, err := nn.LoadCheckpoint(dir, after.params, after.opt); err != nil {
				t.Fatal(err)
			}
			after.train(c.all - c.first)
			sameState(t, "resumed", after.state(), straight.state())
		})
	}
}

// A checkpoint of another model or optimizer gives an error naming what
// differs, and changes nothing.
func checkpointMismatch(t *testing.T, d *vk.Device) {
	dir := t.TempDir()
	a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	a.train(1)
	if err := nn.SaveCheckpoint(dir, a.params, nil, a.opt); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		rig    func() *ckptRig
		naming []string
	}{
		{"shape", func() *ckptRig { return newRig(t, d, 2, "fc", 5, adamMaker(otherAdam)) }, []string{"fc1.weight", "[3 4]", "[5 4]"}},
		{"names", func() *ckptRig { return newRig(t, d, 2, "layer", 3, adamMaker(otherAdam)) }, []string{"layer1.weight"}},
		{"optimizer", func() *ckptRig {
			return newRig(t, d, 2, "fc", 3, sgdMaker(nn.SGDOptions{LR: 0.3, Momentum: 0.5}))
		}, []string{"optimizer"}},
	} {
		b := c.rig()
		b.train(1)
		before, lr := b.state(), b.opt.LR()
		_, err := nn.LoadCheckpoint(dir, b.params, b.opt)
		if err == nil {
			t.Errorf("%s mismatch: no error", c.name)
			continue
		}
		tContains(t, c.name+" mismatch", err.Error(), c.naming...)
		sameState(t, c.name+" mismatch", b.state(), before)
		if b.opt.LR() != lr {
			t.Errorf("%s mismatch: LR changed from %g to %g", c.name, lr, b.opt.LR())
		}
	}
}

// Corrupt or truncated files give errors, and change nothing.
func checkpointCorrupt(t *testing.T, d *vk.Device) {
	a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	a.train(1)
	good := t.TempDir()
	if err := nn.SaveCheckpoint(good, a.params, nil, a.opt); err != nil {
		t.Fatal(err)
	}
	truncate := func(name string) func(dir string) error {
		return func(dir string) error {
			p := filepath.Join(dir, "step-1", name)
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(p, raw[:len(raw)-7], 0o644)
		}
	}
	write := func(name, content string) func(dir string) error {
		return func(dir string) error { return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644) }
	}
	hyper := func(key string, v any) func(st map[string]any) {
		return func(st map[string]any) { optimizer0(st)["settings"].(map[string]any)[key] = v }
	}
	cases := []struct {
		name    string
		corrupt func(dir string) error
	}{
		{"truncated model.safetensors", truncate("model.safetensors")},
		{"truncated optimizer-0.safetensors", truncate("optimizer-0.safetensors")},
		{"truncated state.json", truncate("state.json")},
		{"model.safetensors of garbage", write("step-1/model.safetensors", "\xff\xff\xff\xff\xff\xff\xff\x7fgarbage")},
		{"empty model.safetensors", write("step-1/model.safetensors", "")},
		{"state.json not JSON", write("step-1/state.json", "{\"version\": 1, ")},
		{"state.json of another version", editState(func(st map[string]any) { st["version"] = 2 })},
		{"state.json with negative steps", editState(func(st map[string]any) { optimizer0(st)["steps"] = -1 })},
		{"state.json with a negative lr", editState(hyper("LR", -1))},
		{"state.json with lr 0 without ZeroLR", editState(hyper("LR", 0))},
		{"state.json with beta1 1", editState(hyper("Beta1", 1))},
		{"state.json with a mistyped setting", editState(hyper("Eps", "tiny"))},
		{"LATEST of garbage", write("LATEST", "garbage\n")},
		{"empty LATEST", write("LATEST", "")},
		{"LATEST naming a missing version", write("LATEST", "step-7\n")},
		{"missing model.safetensors", func(dir string) error { return os.Remove(filepath.Join(dir, "step-1", "model.safetensors")) }},
	}
	for i, c := range cases {
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
		if err == nil {
			t.Errorf("case %d (%s): no error", i, c.name)
		}
		sameState(t, fmt.Sprintf("case %d (%s)", i, c.name), b.state(), before)
		if b.opt.LR() != otherAdam.LR {
			t.Errorf("case %d (%s): LR changed to %g", i, c.name, b.opt.LR())
		}
	}

	b := newRig(t, d, 2, "fc", 3, adamMaker(otherAdam))
	if _, err := nn.LoadCheckpoint(t.TempDir(), b.params, b.opt); !errors.Is(err, nn.ErrNoCheckpoint) {
		t.Errorf("empty directory: %v, want ErrNoCheckpoint", err)
	}

	// An SGD made without momentum has no buffers for one that a state.json
	// could claim.
	plain := nn.SGDOptions{LR: 0.1}
	sgdDir := t.TempDir()
	p := newRig(t, d, 1, "fc", 3, sgdMaker(plain))
	p.train(1)
	if err := nn.SaveCheckpoint(sgdDir, p.params, nil, p.opt); err != nil {
		t.Fatal(err)
	}
	if err := editState(hyper("Momentum", 0.9))(sgdDir); err != nil {
		t.Fatal(err)
	}
	q := newRig(t, d, 2, "fc", 3, sgdMaker(plain))
	before := q.state()
	if _, err := nn.LoadCheckpoint(sgdDir, q.params, q.opt); err == nil || !strings.Contains(err.Error(), "momentum") {
		t.Errorf("momentum claimed by state.json: %v, want an error naming it", err)
	}
	sameState(t, "after a claimed momentum", q.state(), before)
	if err := q.opt.Step(); err != nil { // still a plain SGD
		t.Fatal(err)
	}
}

// editState rewrites the state.json of the latest version in dir through
// f, with the checksum LATEST records for it remade.
func editState(f func(st map[string]any)) func(dir string) error {
	return func(dir string) error {
		latest, err := os.ReadFile(filepath.Join(dir, "LATEST"))
		if err != nil {
			return err
		}
		version, _, _ := strings.Cut(string(latest), "\n")
		p := filepath.Join(dir, version, "state.json")
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var st map[string]any
		if err := json.Unmarshal(raw, &st); err != nil {
			return err
		}
		f(st)
		raw, _ = json.Marshal(st)
		if err := os.WriteFile(p, raw, 0o644); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "LATEST"), []byte(version+"\nstate.json "+checkpoint.Sum(raw)+"\n"), 0o644)
	}
}

// optimizer0 returns the first optimizer's section of a state.json.
func optimizer0(st map[string]any) map[string]any {
	return st["optimizers"].([]any)[0].(map[string]any)
}

// A save that fails half-way leaves the previous version loadable and no
// partial version behind.
func checkpointFailedSave(t *testing.T, d *vk.Device) {
	dir := t.TempDir()
	a := newRig(t, d, 1, "fc", 3, adamMaker(ckptAdam))
	a.train(1)
	if err := nn.SaveCheckpoint(dir, a.params, nil, a.opt); err != nil {
		t.Fatal(err)
	}
	saved := a.state()
	a.train(1)

	// A parameter that carries an error (its memory could not be
	// allocated) fails the model file.
	bad := failedParam(t, a.params[1].Name, 3)
	defer bad.Close()
	params := slices.Clone(a.params)
	params[1] = bad
	err := nn.SaveCheckpoint(dir, params, nil, a.opt)
	if !errors.Is(err, vk.ErrOutOfDeviceMemory) {
		t.Errorf("save with a failed parameter: %v, want its error", err)
	}
	// Moments that cannot be read (their device is lost) fail the
	// optimizer file.
	lost := devtest.Open(t)
	c := newRig(t, lost, 1, "fc", 3, adamMaker(ckptAdam))
	loseDevice(t, lost)
	if err := nn.SaveCheckpoint(dir, a.params, nil, c.opt); !errors.Is(err, vk.ErrDeviceLost) {
		t.Errorf("save with unreadable moments: %v, want %v", err, vk.ErrDeviceLost)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"LATEST", "step-1"}) {
		t.Errorf("after failed saves the directory holds %v, want LATEST and step-1", names)
	}

	b := newRig(t, d, 2, "fc", 3, adamMaker(otherAdam))
	if _, err := nn.LoadCheckpoint(dir, b.params, b.opt); err != nil {
		t.Fatal(err)
	}
	sameState(t, "loaded after failed saves", b.state(), saved)
}

// failedParam returns a parameter whose value carries an error, as one
// whose memory could not be allocated: it is made on a fresh device whose
// first memory allocation fails.
func failedParam(t *testing.T, name string, n int) *nn.Param {
	t.Helper()
	d := devtest.Open(t)
	d.InjectFaults(vk.Faults{AllocN: 1})
	p := nn.NewParam(d, name, make([]float32, n), n)
	d.InjectFaults(vk.Faults{})
	if !errors.Is(p.Value.Err(), vk.ErrOutOfDeviceMemory) {
		t.Fatalf("parameter on a device whose allocation fails: error %v", p.Value.Err())
	}
	return p
}

// loseDevice makes d lost, as a device whose submit fails stays.
func loseDevice(t *testing.T, d *vk.Device) {
	t.Helper()
	d.InjectFaults(vk.Faults{SubmitN: 1})
	tensor.Zeros(d, tensor.Float32, 1).Release() // work to submit
	if err := d.Wait(); !errors.Is(err, vk.ErrDeviceLost) {
		t.Fatalf("wait with a failing submit: %v", err)
	}
}

// dirNames lists dir, sorted.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}
