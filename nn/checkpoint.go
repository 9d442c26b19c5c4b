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

// A checkpoint is a directory of versions. Each save writes, under the
// directory's lock file LOCK, a new subdirectory step-N (N counts the
// saves) holding
//
//	model.safetensors        the parameters
//	optimizer-I.safetensors  the moment buffers of optimizer I, one file per optimizer
//	state.json               the format, each optimizer's kind, settings and step
//	                         count, the extra sections, and the SHA-256 of
//	                         every other file of the version
//
// then atomically points the file LATEST at it (a line "step-N", then a
// line "state.json sha256:..." with the checksum of state.json), then
// removes the versions older than the last CheckpointKeepLast. A crash at
// any moment leaves LATEST naming a complete version. A load checks every
// file against its checksum before it uses it: a flipped bit is an error
// naming the file (wrapping checkpoint.ErrChecksum).
//
// Format 1, written before the format was recorded, held exactly one
// optimizer in optimizer.safetensors and no checksums; LoadCheckpoint still
// reads it, with no checksum to verify (the checks of the safetensors
// layout, of names, shapes and dtypes, and of non-finite values still
// apply). A later format is refused with an error naming it.

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
	return o.stateOf(func(int) bool { return true })
}

// usedState is stateTensors for the parameters a step has used: a
// parameter frozen since the optimizer was made has moments no step wrote
// (zeros), which a checkpoint leaves out, as PyTorch's optimizer state has
// no entry for a parameter it never stepped.
func (o *optimizer) usedState() []checkpoint.Named {
	return o.stateOf(func(i int) bool { return o.used[i] })
}

func (o *optimizer) stateOf(keep func(i int) bool) []checkpoint.Named {
	var ts []checkpoint.Named
	for m, suffix := range []string{".m1", ".m2"} {
		for i, s := range o.moments(m) {
			if s != nil && keep(i) {
				ts = append(ts, checkpoint.Named{Name: o.params[i].Name + suffix, T: s})
			}
		}
	}
	return ts
}

// inFile is stateTensors for the parameters whose moments f holds; a
// parameter's moments are all in it or none.
func (o *optimizer) inFile(f *checkpoint.File) (in []checkpoint.Named, err error) {
	byParam := map[string][2]bool{} // parameter: some moments in f, some not
	for _, n := range o.stateTensors() {
		p := n.Name[:strings.LastIndexByte(n.Name, '.')]
		seen := byParam[p]
		if _, ok := f.Tensors[n.Name]; ok {
			in, seen[0] = append(in, n), true
		} else {
			seen[1] = true
		}
		byParam[p] = seen
	}
	for p, seen := range byParam {
		if seen[0] && seen[1] {
			return nil, fmt.Errorf("the file holds some of parameter %s's moments, not all", p)
		}
	}
	return in, nil
}

// squareStates names the optimizer's state tensors that hold running
// averages of squares, which a load refuses to take negative: Adam's second
// moments (.m2) and both of Adadelta's. SGD's momentum has any sign.
func squareStates(opt Stateful) []string {
	var names []string
	for _, n := range opt.stateTensors() {
		if opt.kind() == "adadelta" || opt.kind() == "adam" && strings.HasSuffix(n.Name, ".m2") {
			names = append(names, n.Name)
		}
	}
	return names
}

func (s *SGD) hyper() any  { return &s.o }
func (a *Adam) hyper() any { return &a.o }

func (s *SGD) kind() string  { return "sgd" }
func (a *Adam) kind() string { return "adam" }

type stateFile struct {
	Format     int                        `json:"format,omitempty"` // 0 in format 1
	Version    int                        `json:"version"`
	Optimizers []optimizerState           `json:"optimizers"`
	Files      map[string]string          `json:"files"` // name: checksum, as checkpoint.Sum gives it
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
	Groups   []groupRecord   `json:"groups,omitempty"` // an optimizer made with ParamGroups
}

func optimizerFile(i int) string { return "optimizer-" + strconv.Itoa(i) + ".safetensors" }

// SaveCheckpoint writes params, the state of each optimizer of opts (any
// number, none included), and extra JSON sections (the scaler's StateDict,
// a scheduler's state, progress) as a new version in dir, then keeps the
// last CheckpointKeepLast versions. It waits for the device.
//
// Weights or moments holding a NaN or an infinity are refused with an error
// naming the first such tensor (a *checkpoint.NonFiniteError): a diverged
// run never replaces its last good checkpoint. On any error LATEST names
// the previous version, and no file of the new one remains.
//
// One writer at a time: a save holds the directory's lock file LOCK
// (checkpoint.LockDir) from start to end, and a save into a directory whose
// lock another writer holds fails at once with a *checkpoint.LockedError
// naming its pid and host. A LOCK left by a process that died is taken
// over. LoadCheckpoint takes no lock: LATEST always names a complete
// version, and the versions kept stay until later saves.
//
// Under the lock, a save first removes what crashed saves left: temporary
// files (.LATEST.tmp-*, and those of a version's files) and versions newer
// than the one LATEST names. When LATEST is unreadable it removes no
// version, and numbers the new one after the newest there.
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
	lock, err := checkpoint.LockDir(dir)
	if err == nil {
		err = saveCheckpoint(dir, params, extra, opts)
		// Closing the file releases the lock whatever Unlock returns; a
		// LOCK file it could not remove is stale, and taken over.
		lock.Unlock()
	} else {
		err = fmt.Errorf("nn: checkpoint %s: %w", dir, err)
	}
	if err != nil && errors.Is(statErr, os.ErrNotExist) {
		os.Remove(dir) // made for this save; only if still empty
	}
	return err
}

func saveCheckpoint(dir string, params []*Param, extra map[string]json.RawMessage, opts []Stateful) (err error) {
	cur, _, curErr := latest(dir)
	version := removeLeftovers(dir, cur, curErr == nil) + 1
	vdir := filepath.Join(dir, "step-"+strconv.Itoa(version))
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
	st := stateFile{Format: checkpointFormat, Version: version, Optimizers: make([]optimizerState, len(opts)),
		Files: map[string]string{}, Extra: extra}
	sum, err := checkpoint.SaveWith(filepath.Join(vdir, "model.safetensors"), named(params), nil, finite)
	if err != nil {
		return err
	}
	st.Files["model.safetensors"] = sum
	for i, opt := range opts {
		if st.Optimizers[i], sum, err = saveOptimizer(vdir, i, opt); err != nil {
			return fmt.Errorf("optimizer %d: %w", i, err)
		}
		st.Files[st.Optimizers[i].File] = sum
	}
	b, err := json.MarshalIndent(st, "", "\t")
	if err != nil {
		return fmt.Errorf("state.json: %w", err)
	}
	b = append(b, '\n')
	if err := checkpoint.WriteFile(filepath.Join(vdir, "state.json"), b); err != nil {
		return err
	}
	if err := writeLatest(dir, version, checkpoint.Sum(b)); err != nil {
		return err
	}
	prune(dir, version)
	return nil
}

// finite refuses weights and moments that hold NaN or inf: such a version
// would replace a good one and train no further.
var finite = checkpoint.SaveOptions{Finite: true}

// saveOptimizer writes optimizer i's moments and returns its section of
// state.json and the checksum of its file.
func saveOptimizer(vdir string, i int, opt Stateful) (s optimizerState, sum string, err error) {
	o := opt.optimizerBase()
	o.mu.Lock()
	defer o.mu.Unlock()
	s = optimizerState{Kind: opt.kind(), File: optimizerFile(i)}
	if sum, err = checkpoint.SaveWith(filepath.Join(vdir, s.File), o.usedState(), nil, finite); err != nil {
		return s, "", err
	}
	if s.Steps, err = o.Steps(); err != nil {
		return s, "", err
	}
	s.Groups = o.groupRecords()
	s.Settings, err = json.Marshal(opt.hyper())
	return s, sum, err
}

// removeLeftovers removes what saves that crashed left in dir: their
// temporary files, and, when LATEST is readable (ok) and names version cur,
// the versions newer than it, which it never named. It returns the newest
// version left. The caller holds the directory's lock, so no other save
// is under way; other files are left alone.
func removeLeftovers(dir string, cur int, ok bool) (newest int) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(dir, name)
		if v, isVersion := versionOf(name); isVersion && e.IsDir() {
			if ok && v > cur {
				os.RemoveAll(path)
				continue
			}
			newest = max(newest, v)
			sub, _ := os.ReadDir(path)
			for _, f := range sub {
				if isTemp(f.Name(), "state.json", "*.safetensors") {
					os.Remove(filepath.Join(path, f.Name()))
				}
			}
		} else if isTemp(name, "LATEST") {
			os.Remove(path)
		}
	}
	if ok {
		newest = cur
	}
	return newest
}

// isTemp reports whether name is a temporary file that writing a file named
// by one of patterns makes (checkpoint.WriteFile: ".name.tmp-digits").
func isTemp(name string, patterns ...string) bool {
	base, digits, found := strings.Cut(strings.TrimPrefix(name, "."), ".tmp-")
	if !found || !strings.HasPrefix(name, ".") || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return false
	}
	for _, p := range patterns {
		if m, _ := filepath.Match(p, base); m {
			return true
		}
	}
	return false
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

// latest reads LATEST: the latest version, and the checksum of its
// state.json ("" in format 1).
func latest(dir string) (version int, stateSum string, err error) {
	raw, err := os.ReadFile(filepath.Join(dir, "LATEST"))
	if err != nil {
		return 0, "", err
	}
	text := strings.TrimSpace(string(raw))
	first, second, two := strings.Cut(text, "\n")
	v, ok := versionOf(strings.TrimSpace(first))
	if two {
		stateSum, two = strings.CutPrefix(strings.TrimSpace(second), "state.json ")
	}
	if !ok || (!two && second != "") || strings.ContainsAny(stateSum, " \n") {
		return 0, "", fmt.Errorf("LATEST holds %q, not step-N and the checksum of its state.json", text)
	}
	return v, stateSum, nil
}

func writeLatest(dir string, version int, stateSum string) error {
	return checkpoint.WriteFile(filepath.Join(dir, "LATEST"), []byte("step-"+strconv.Itoa(version)+"\nstate.json "+stateSum+"\n"))
}

// ErrNoCheckpoint is returned by LoadCheckpoint for a directory without one.
var ErrNoCheckpoint = errors.New("nn: no checkpoint")

// LoadCheckpoint restores params and the state of each optimizer of opts
// from the latest version in dir, and returns its extra sections. The
// optimizers are given in the order they were saved, as many as were
// saved; names, shapes, dtypes and optimizer kinds must match. Every file
// is read and checked before anything changes: against the checksum the
// version recorded (an error wrapping checkpoint.ErrChecksum names the
// file), for its layout, and for NaN or inf in weights or moments (a
// *checkpoint.NonFiniteError naming the tensor). On an error, which says
// what is wrong, nothing is changed.
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
	version, stateSum, err := latest(dir)
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
	st, err := readState(vdir, version, stateSum)
	if err != nil {
		return nil, err
	}
	if len(st.Optimizers) != len(opts) {
		return nil, fmt.Errorf("the checkpoint holds %d optimizer%s, %d given", len(st.Optimizers), plural(len(st.Optimizers)), len(opts))
	}
	// Read and check every file before changing anything.
	model, err := checkpoint.ReadSum(filepath.Join(vdir, "model.safetensors"), st.Files["model.safetensors"])
	if err != nil {
		return nil, err
	}
	ts := named(params)
	if err := model.Check(ts); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if err := model.CheckFinite(); err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	for _, opt := range opts {
		o := opt.optimizerBase()
		o.mu.Lock()
		defer o.mu.Unlock()
	}
	loads := make([]optimizerLoad, len(opts))
	for i, opt := range opts {
		if loads[i], err = readOptimizer(vdir, st.Optimizers[i], st.Files[st.Optimizers[i].File], opt); err != nil {
			return nil, fmt.Errorf("optimizer %d: %w", i, err)
		}
	}
	// Change.
	for _, p := range params {
		p.staleHalf()
	}
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

// readState reads the state.json of version, in either format, checking it
// against its checksum sum from LATEST.
func readState(vdir string, version int, sum string) (*stateFile, error) {
	path := filepath.Join(vdir, "state.json")
	b, err := checkpoint.ReadFileSum(path, sum)
	if err != nil {
		return nil, err
	}
	var st stateFile
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("checkpoint: load %s: %w", path, err)
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
		if sum != "" || st.Files != nil {
			return nil, errors.New("state.json of format 1 with checksums")
		}
	case checkpointFormat:
		if sum == "" {
			return nil, fmt.Errorf("LATEST records no checksum for the state.json of format %d", st.Format)
		}
		for _, name := range append([]string{"model.safetensors"}, optimizerFiles(st.Optimizers)...) {
			if !strings.HasPrefix(st.Files[name], "sha256:") {
				return nil, fmt.Errorf("state.json records no checksum for %s", name)
			}
		}
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

func optimizerFiles(ss []optimizerState) []string {
	names := make([]string, len(ss))
	for i, o := range ss {
		names[i] = o.File
	}
	return names
}

// optimizerLoad is an optimizer's state read and checked, to be applied.
type optimizerLoad struct {
	opt      Stateful
	file     *checkpoint.File
	in       []checkpoint.Named // the state tensors the file holds
	settings reflect.Value      // a pointer to the new settings
	steps    int
	groups   []groupRecord // checked against the optimizer's
}

// readOptimizer reads and checks an optimizer's state, its file against
// the checksum sum; it changes nothing. The caller holds the optimizer's
// lock.
func readOptimizer(vdir string, s optimizerState, sum string, opt Stateful) (optimizerLoad, error) {
	if s.Kind != "" && s.Kind != opt.kind() {
		return optimizerLoad{}, fmt.Errorf("%s in the checkpoint, %s given", s.Kind, opt.kind())
	}
	f, err := checkpoint.ReadSum(filepath.Join(vdir, s.File), sum)
	if err != nil {
		return optimizerLoad{}, err
	}
	in, err := opt.optimizerBase().inFile(f)
	if err != nil {
		return optimizerLoad{}, err
	}
	if err := f.Check(in); err != nil {
		return optimizerLoad{}, err
	}
	if err := f.CheckFinite(); err != nil {
		return optimizerLoad{}, err
	}
	if err := f.CheckNonNegative(squareStates(opt)); err != nil {
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
	if err := opt.optimizerBase().checkGroups(s.Groups); err != nil {
		return optimizerLoad{}, err
	}
	return optimizerLoad{opt: opt, file: f, in: in, settings: settings, steps: s.Steps, groups: s.Groups}, nil
}

// apply loads the state into the optimizer, whose lock the caller holds.
func (l optimizerLoad) apply() error {
	if err := l.file.Fill(l.in); err != nil {
		return err
	}
	// The moments the file leaves out were never written: zeros, unused.
	o := l.opt.optimizerBase()
	got := map[*tensor.Tensor]bool{}
	for _, n := range l.in {
		got[n.T] = true
	}
	for m := range 2 {
		for i, t := range o.moments(m) {
			if t == nil {
				continue
			}
			o.used[i] = got[t]
			if !got[t] {
				if err := t.Zero(); err != nil {
					return err
				}
			}
		}
	}
	reflect.ValueOf(l.opt.hyper()).Elem().Set(l.settings.Elem())
	l.opt.optimizerBase().setGroups(l.groups)
	return l.opt.optimizerBase().setSteps(l.steps)
}

// fits checks that settings loaded from a file need no state that the
// optimizer does not keep: an SGD made without momentum has no buffers
// for one.
func (o *optimizer) fits(hyper any) error {
	if h, ok := hyper.(*SGDOptions); ok && h.Momentum != 0 && o.moments(0) == nil {
		return fmt.Errorf("momentum %g, but the optimizer was made without momentum buffers", h.Momentum)
	}
	if o.grouped && reflect.ValueOf(hyper).Elem().FieldByName("WeightDecay").Float() != 0 {
		return errors.New("weight decay in the options of a grouped optimizer")
	}
	return nil
}
