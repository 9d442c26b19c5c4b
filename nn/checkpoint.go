package nn

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/vkamp/vkamp/checkpoint"
)

// A checkpoint is a directory of versions: each save writes a new
// subdirectory step-N with model.safetensors (the parameters),
// optimizer.safetensors (its moment buffers) and state.json (the optimizer's
// scalars and step count, and extra sections such as the loss scaler's state
// dict), then atomically points the file LATEST at it, then removes older
// versions. A crash at any moment leaves LATEST naming a complete version.

// Stateful is an optimizer whose state a checkpoint holds: SGD and Adam.
type Stateful interface {
	stateTensors() []checkpoint.Named
	hyper() any
	optimizerBase() *optimizer
}

func (o *optimizer) optimizerBase() *optimizer { return o }

func (o *optimizer) stateTensors() []checkpoint.Named {
	var ts []checkpoint.Named
	for m, suffix := range []string{".m1", ".m2"} {
		for i, s := range o.moments(m) {
			if s != nil {
				ts = append(ts, checkpoint.Named{Name: o.params[i].Name + suffix, T: s})
			}
		}
	}
	return ts
}

func (s *SGD) hyper() any  { return &s.o }
func (a *Adam) hyper() any { return &a.o }

type stateFile struct {
	Version   int                        `json:"version"`
	Steps     int                        `json:"optimizer_steps"`
	Optimizer json.RawMessage            `json:"optimizer"`
	Extra     map[string]json.RawMessage `json:"extra,omitempty"`
}

// SaveCheckpoint writes params, the optimizer's state and extra JSON
// sections (for example "scaler": the scaler's StateDict) as a new version
// in dir. It waits for the device.
func SaveCheckpoint(dir string, params []*Param, opt Stateful, extra map[string]json.RawMessage) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("nn: checkpoint: %w", err)
	}
	version := 1
	if cur, err := latest(dir); err == nil {
		version = cur + 1
	}
	vdir := filepath.Join(dir, "step-"+strconv.Itoa(version))
	os.RemoveAll(vdir) // a leftover of a save that crashed before LATEST moved
	if err := os.Mkdir(vdir, 0o755); err != nil {
		return fmt.Errorf("nn: checkpoint: %w", err)
	}
	fail := func(err error) error {
		os.RemoveAll(vdir)
		return fmt.Errorf("nn: checkpoint %s: %w", dir, err)
	}
	if err := checkpoint.Save(filepath.Join(vdir, "model.safetensors"), named(params), nil); err != nil {
		return fail(err)
	}
	o := opt.optimizerBase()
	o.mu.Lock()
	defer o.mu.Unlock()
	if err := checkpoint.Save(filepath.Join(vdir, "optimizer.safetensors"), opt.stateTensors(), nil); err != nil {
		return fail(err)
	}
	steps, err := o.Steps()
	if err != nil {
		return fail(err)
	}
	hyper, err := json.Marshal(opt.hyper())
	if err != nil {
		return fail(err)
	}
	st := stateFile{Version: version, Steps: steps, Optimizer: hyper, Extra: extra}
	if err := checkpoint.SaveJSON(filepath.Join(vdir, "state.json"), st); err != nil {
		return fail(err)
	}
	if err := writeLatest(dir, version); err != nil {
		return fail(err)
	}
	// Older versions are no longer needed.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if v, ok := versionOf(e.Name()); ok && v != version {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	return nil
}

func named(params []*Param) []checkpoint.Named {
	ts := make([]checkpoint.Named, len(params))
	for i, p := range params {
		ts[i] = checkpoint.Named{Name: p.Name, T: p.Value}
	}
	return ts
}

func versionOf(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "step-")
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(s)
	return v, err == nil && v > 0
}

func latest(dir string) (int, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "LATEST"))
	if err != nil {
		return 0, err
	}
	v, ok := versionOf(strings.TrimSpace(string(raw)))
	if !ok {
		return 0, fmt.Errorf("LATEST holds %q, not step-N", strings.TrimSpace(string(raw)))
	}
	return v, nil
}

func writeLatest(dir string, version int) error {
	return checkpoint.WriteFile(filepath.Join(dir, "LATEST"), []byte("step-"+strconv.Itoa(version)+"\n"))
}

// ErrNoCheckpoint is returned by LoadCheckpoint for a directory without one.
var ErrNoCheckpoint = errors.New("nn: no checkpoint")

// LoadCheckpoint restores params and the optimizer's state from the latest
// version in dir, and returns its extra sections. Names, shapes and dtypes
// must match; the error says what differs, and nothing is changed then.
func LoadCheckpoint(dir string, params []*Param, opt Stateful) (map[string]json.RawMessage, error) {
	version, err := latest(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoCheckpoint, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("nn: checkpoint %s: %w", dir, err)
	}
	vdir := filepath.Join(dir, "step-"+strconv.Itoa(version))
	var st stateFile
	if err := checkpoint.LoadJSON(filepath.Join(vdir, "state.json"), &st); err != nil {
		return nil, fmt.Errorf("nn: checkpoint %s: %w", dir, err)
	}
	if st.Version != version || st.Steps < 0 {
		return nil, fmt.Errorf("nn: checkpoint %s: state.json is of version %d with %d steps, LATEST says %d", dir, st.Version, st.Steps, version)
	}
	// Check both files fully before changing anything.
	model, err := checkpoint.Read(filepath.Join(vdir, "model.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("nn: checkpoint %s: %w", dir, err)
	}
	if err := matches(model, named(params)); err != nil {
		return nil, fmt.Errorf("nn: checkpoint %s: model: %w", dir, err)
	}
	o := opt.optimizerBase()
	o.mu.Lock()
	defer o.mu.Unlock()
	states := opt.stateTensors()
	optFile, err := checkpoint.Read(filepath.Join(vdir, "optimizer.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("nn: checkpoint %s: %w", dir, err)
	}
	if err := matches(optFile, states); err != nil {
		return nil, fmt.Errorf("nn: checkpoint %s: optimizer: %w", dir, err)
	}
	hyper := opt.hyper()
	backup, _ := json.Marshal(hyper)
	restore := func() { json.Unmarshal(backup, hyper) }
	err = json.Unmarshal(st.Optimizer, hyper)
	if v, ok := hyper.(interface{ validate() error }); ok && err == nil {
		err = v.validate()
	}
	if err == nil {
		err = o.fits(hyper)
	}
	if err != nil {
		restore()
		return nil, fmt.Errorf("nn: checkpoint %s: optimizer settings: %w", dir, err)
	}
	if err := checkpoint.Load(filepath.Join(vdir, "model.safetensors"), named(params)); err != nil {
		restore()
		return nil, fmt.Errorf("nn: checkpoint %s: %w", dir, err)
	}
	if err := checkpoint.Load(filepath.Join(vdir, "optimizer.safetensors"), states); err != nil {
		restore()
		return nil, fmt.Errorf("nn: checkpoint %s: %w", dir, err)
	}
	if err := o.setSteps(st.Steps); err != nil {
		return nil, err
	}
	return st.Extra, nil
}

// fits checks that settings loaded from a file need no state that the
// optimizer does not keep: an SGD made without momentum has no buffers
// for one.
func (o *optimizer) fits(hyper any) error {
	if h, ok := hyper.(*SGDOptions); ok && h.Momentum != 0 && o.moments(0) == nil {
		return fmt.Errorf("momentum %g, but the optimizer was made without momentum buffers", h.Momentum)
	}
	return nil
}

// matches checks a file against the tensors it must fill.
func matches(f *checkpoint.File, ts []checkpoint.Named) error {
	var problems []string
	for _, n := range ts {
		h, ok := f.Tensors[n.Name]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s is missing", n.Name))
		case h.DType != n.T.DType():
			problems = append(problems, fmt.Sprintf("%s is %s, want %s", n.Name, h.DType, n.T.DType()))
		case !slices.Equal(h.Shape, n.T.Shape()):
			problems = append(problems, fmt.Sprintf("%s has shape %v, want %v", n.Name, h.Shape, n.T.Shape()))
		}
	}
	if len(f.Tensors) != len(ts) && len(problems) == 0 {
		problems = append(problems, fmt.Sprintf("%d tensors, want %d", len(f.Tensors), len(ts)))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
