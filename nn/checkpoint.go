package nn

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/vkamp/vkamp/checkpoint"
	"github.com/vkamp/vkamp/tensor"
)

// A checkpoint is a directory of versions. Each save writes a new
// subdirectory step-N (N counts the saves) holding
//
//	model.safetensors        the parameters
//	optimizer-I.safetensors  the moment buffers of optimizer I, one file per optimizer
//	state.json               the format, each optimizer's kind, settings and step
//	                         count, and the extra sections
//
// then atomically points the file LATEST at it, then removes the versions
// older than the last CheckpointKeepLast. A crash at any moment leaves
// LATEST naming a complete version.
//
// Format 1, written before the format was recorded, held exactly one
// optimizer in optimizer.safetensors; LoadCheckpoint still reads it.

// CheckpointKeepLast is how many versions SaveCheckpoint keeps in a
// directory, the new one included: by default 2, the newest and the one
// before it. Older versions are removed only once LATEST names the new
// one, so a failed save removes nothing. Values below 1 count as 1. Set it
// before saving, not while a save runs.
var CheckpointKeepLast = 2

// checkpointFormat is the format SaveCheckpoint writes.
const checkpointFormat = 2

// Stateful is an optimizer whose state a checkpoint holds: SGD and Adam.
type Stateful interface {
	stateTensors() []checkpoint.Named
	hyper() any
	kind() string
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

func (s *SGD) kind() string  { return "sgd" }
func (a *Adam) kind() string { return "adam" }

type stateFile struct {
	Format     int                        `json:"format,omitempty"` // 0 in format 1
	Version    int                        `json:"version"`
	Optimizers []optimizerState           `json:"optimizers"`
	Extra      map[string]json.RawMessage `json:"extra,omitempty"`

	// Format 1: the one optimizer.
	Steps     *int            `json:"optimizer_steps,omitempty"`
	Optimizer json.RawMessage `json:"optimizer,omitempty"`
}

// optimizerState is one optimizer in a state.json.
type optimizerState struct {
	Kind     string          `json:"kind"` // "" in format 1
	File     string          `json:"file"`
	Steps    int             `json:"steps"`
	Settings json.RawMessage `json:"settings"`
}

func optimizerFile(i int) string { return "optimizer-" + strconv.Itoa(i) + ".safetensors" }

// SaveCheckpoint writes params, the state of each optimizer of opts (any
// number, none included), and extra JSON sections (the scaler's StateDict,
// a scheduler's state, progress) as a new version in dir, then keeps the
// last CheckpointKeepLast versions. It waits for the device. Weights or
// moments holding a NaN or an infinity are refused with an error naming the
// first such tensor (a *checkpoint.NonFiniteError): a diverged run never
// replaces its last good checkpoint. On any error the directory is left as
// it was: LATEST names the previous version, and no file of the new one
// remains.
func SaveCheckpoint(dir string, params []*Param, extra map[string]json.RawMessage, opts ...Stateful) error {
	for i, opt := range opts {
		if opt == nil {
			panic(&tensor.UsageError{Op: "SaveCheckpoint", Msg: fmt.Sprintf("optimizer %d is nil", i)})
		}
	}
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("nn: checkpoint: %w", err)
	}
	err := saveCheckpoint(dir, params, extra, opts)
	if err != nil && errors.Is(statErr, os.ErrNotExist) {
		os.Remove(dir) // made for this save; only if still empty
	}
	return err
}

func saveCheckpoint(dir string, params []*Param, extra map[string]json.RawMessage, opts []Stateful) (err error) {
	version := 1
	cur, curErr := latest(dir)
	if curErr == nil {
		version = cur + 1
	}
	vdir := filepath.Join(dir, "step-"+strconv.Itoa(version))
	os.RemoveAll(vdir) // a leftover of a save that crashed before LATEST moved
	if err := os.Mkdir(vdir, 0o755); err != nil {
		return fmt.Errorf("nn: checkpoint: %w", err)
	}
	defer func() {
		if err == nil {
			return
		}
		os.RemoveAll(vdir)
		if nf := (*checkpoint.NonFiniteError)(nil); errors.As(err, &nf) && curErr == nil {
			err = fmt.Errorf("%w; step-%d stays the latest version", err, cur)
		}
		err = fmt.Errorf("nn: checkpoint %s: %w", dir, err)
	}()
	if err := checkpoint.SaveWith(filepath.Join(vdir, "model.safetensors"), named(params), nil, finite); err != nil {
		return err
	}
	st := stateFile{Format: checkpointFormat, Version: version, Optimizers: make([]optimizerState, len(opts)), Extra: extra}
	for i, opt := range opts {
		if st.Optimizers[i], err = saveOptimizer(vdir, i, opt); err != nil {
			return fmt.Errorf("optimizer %d: %w", i, err)
		}
	}
	if err := checkpoint.SaveJSON(filepath.Join(vdir, "state.json"), st); err != nil {
		return err
	}
	if err := writeLatest(dir, version); err != nil {
		return err
	}
	prune(dir, version)
	return nil
}

// finite refuses weights and moments that hold NaN or inf: such a version
// would replace a good one and train no further.
var finite = checkpoint.SaveOptions{Finite: true}

// saveOptimizer writes optimizer i's moments and returns its section of
// state.json.
func saveOptimizer(vdir string, i int, opt Stateful) (optimizerState, error) {
	o := opt.optimizerBase()
	o.mu.Lock()
	defer o.mu.Unlock()
	s := optimizerState{Kind: opt.kind(), File: optimizerFile(i)}
	if err := checkpoint.SaveWith(filepath.Join(vdir, s.File), opt.stateTensors(), nil, finite); err != nil {
		return s, err
	}
	var err error
	if s.Steps, err = o.Steps(); err != nil {
		return s, err
	}
	s.Settings, err = json.Marshal(opt.hyper())
	return s, err
}

// prune removes the versions that CheckpointKeepLast no longer keeps: those
// older than the newest kept. Failing to remove one is not an error: the
// new version is complete and LATEST names it.
func prune(dir string, version int) {
	oldest := version - max(CheckpointKeepLast, 1) + 1
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if v, ok := versionOf(e.Name()); ok && v < oldest {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
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

// LoadCheckpoint restores params and the state of each optimizer of opts
// from the latest version in dir, and returns its extra sections. The
// optimizers are given in the order they were saved, as many as were
// saved; names, shapes, dtypes and optimizer kinds must match. Every file
// is read and checked before anything changes: on an error, which says
// what differs, nothing is changed.
func LoadCheckpoint(dir string, params []*Param, opts ...Stateful) (extra map[string]json.RawMessage, err error) {
	for i, opt := range opts {
		if opt == nil {
			panic(&tensor.UsageError{Op: "LoadCheckpoint", Msg: fmt.Sprintf("optimizer %d is nil", i)})
		}
		for j := range i {
			if opts[j].optimizerBase() == opt.optimizerBase() {
				panic(&tensor.UsageError{Op: "LoadCheckpoint", Msg: fmt.Sprintf("optimizer %d is optimizer %d again", i, j)})
			}
		}
	}
	version, err := latest(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", ErrNoCheckpoint, dir)
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("nn: checkpoint %s: %w", dir, err)
		}
	}()
	if err != nil {
		return nil, err
	}
	vdir := filepath.Join(dir, "step-"+strconv.Itoa(version))
	st, err := readState(vdir, version)
	if err != nil {
		return nil, err
	}
	if len(st.Optimizers) != len(opts) {
		return nil, fmt.Errorf("the checkpoint holds %d optimizer%s, %d given", len(st.Optimizers), plural(len(st.Optimizers)), len(opts))
	}
	// Read and check every file before changing anything.
	model, err := checkpoint.Read(filepath.Join(vdir, "model.safetensors"))
	if err != nil {
		return nil, err
	}
	ts := named(params)
	if err := model.Check(ts); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	for _, opt := range opts {
		o := opt.optimizerBase()
		o.mu.Lock()
		defer o.mu.Unlock()
	}
	loads := make([]optimizerLoad, len(opts))
	for i, opt := range opts {
		if loads[i], err = readOptimizer(vdir, st.Optimizers[i], opt); err != nil {
			return nil, fmt.Errorf("optimizer %d: %w", i, err)
		}
	}
	// Change.
	if err := model.Fill(ts); err != nil {
		return nil, err
	}
	for i, l := range loads {
		if err := l.apply(); err != nil {
			return nil, fmt.Errorf("optimizer %d: %w", i, err)
		}
	}
	return st.Extra, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// readState reads the state.json of version, in either format.
func readState(vdir string, version int) (*stateFile, error) {
	var st stateFile
	if err := checkpoint.LoadJSON(filepath.Join(vdir, "state.json"), &st); err != nil {
		return nil, err
	}
	if st.Version != version {
		return nil, fmt.Errorf("state.json is of version %d, LATEST says %d", st.Version, version)
	}
	switch st.Format {
	case 0: // format 1: one optimizer
		if st.Steps == nil || st.Optimizer == nil {
			return nil, errors.New("state.json of format 1 without its optimizer's steps and settings")
		}
		st.Optimizers = []optimizerState{{File: "optimizer.safetensors", Steps: *st.Steps, Settings: st.Optimizer}}
	case checkpointFormat:
	default:
		return nil, fmt.Errorf("state.json is of format %d, written by a later vkamp: this one reads formats 1 and %d", st.Format, checkpointFormat)
	}
	for i, o := range st.Optimizers {
		if o.Steps < 0 {
			return nil, fmt.Errorf("state.json: optimizer %d has %d steps", i, o.Steps)
		}
		if o.File != filepath.Base(o.File) || !strings.HasSuffix(o.File, ".safetensors") {
			return nil, fmt.Errorf("state.json: optimizer %d in file %q", i, o.File)
		}
	}
	return &st, nil
}

// optimizerLoad is an optimizer's state read and checked, to be applied.
type optimizerLoad struct {
	opt      Stateful
	file     *checkpoint.File
	settings reflect.Value // a pointer to the new settings
	steps    int
}

// readOptimizer reads and checks an optimizer's state; it changes nothing.
// The caller holds the optimizer's lock.
func readOptimizer(vdir string, s optimizerState, opt Stateful) (optimizerLoad, error) {
	if s.Kind != "" && s.Kind != opt.kind() {
		return optimizerLoad{}, fmt.Errorf("%s in the checkpoint, %s given", s.Kind, opt.kind())
	}
	f, err := checkpoint.Read(filepath.Join(vdir, s.File))
	if err != nil {
		return optimizerLoad{}, err
	}
	if err := f.Check(opt.stateTensors()); err != nil {
		return optimizerLoad{}, err
	}
	// The settings: the current ones with the file's over them, in a copy.
	cur := reflect.ValueOf(opt.hyper())
	settings := reflect.New(cur.Type().Elem())
	settings.Elem().Set(cur.Elem())
	h := settings.Interface()
	err = json.Unmarshal(s.Settings, h)
	if v, ok := h.(interface{ validate() error }); ok && err == nil {
		err = v.validate()
	}
	if err == nil {
		err = opt.optimizerBase().fits(h)
	}
	if err != nil {
		return optimizerLoad{}, fmt.Errorf("settings: %w", err)
	}
	return optimizerLoad{opt: opt, file: f, settings: settings, steps: s.Steps}, nil
}

// apply loads the state into the optimizer, whose lock the caller holds.
func (l optimizerLoad) apply() error {
	if err := l.file.Fill(l.opt.stateTensors()); err != nil {
		return err
	}
	reflect.ValueOf(l.opt.hyper()).Elem().Set(l.settings.Elem())
	return l.opt.optimizerBase().setSteps(l.steps)
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
