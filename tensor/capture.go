package tensor

import (
	"errors"
	"fmt"

	"github.com/vkamp/vkamp/vk"
)

// Replayer runs a training step as a captured graph (vk.Graph) when the
// step repeats, and records it op by op when it does not, and it never
// replays a graph for a step that would record other work.
//
// The step function runs every time, but from a key's second step on it
// runs traced (vk.Device.BeginTrace): its ops are checked and described,
// not recorded. The description holds every kernel, launch size, push
// constant (a host scalar such as Scale's factor, a learning rate given as
// a number, a dropout seed drawn on the host) and binding, where a tensor
// made during the step counts by its order of making and any other by its
// identity. A key's first trace is captured into a graph and replayed; a
// later trace identical to a graph's replays that graph, with one command
// for the whole step; any other is recorded as it was traced, and captured
// too the second time the same work comes (a batch fed from two tensors in
// turns gets a graph each). So a batch written into a new tensor each
// step, a batch picked from tensors written before, a changed host scalar
// or a changed shape under one key each give a recorded step's results,
// never a stale graph's; such steps count in Recorded and, if the key had
// a graph, in Diverted.
//
// What a replay reads and writes must live in tensors the step binds and
// that outlive it: write the next batch (and seed, and rate) into the same
// tensors (SetBytes) before each Step, and copy results (the loss) into
// tensors made before the step. A step that keeps a tensor it made (an
// output) is recorded every time, since a graph would write the one made
// when it was captured. State kept on the device (the optimizer's moments and
// step count, the loss scale, the skip flag of an overflowed step) is read
// and written by the replay itself, so a replayed step gives the same bits
// as a recorded one.
//
// A key's first step runs untraced, so that it may make what later steps
// reuse (optimizer state, tables, pipelines) with host writes. From then
// on a host read or write inside the step function of a tensor the step
// already used is refused (the traced work has not run, and the host
// access would lose its order with it): Step returns the refusal, wrapping
// vk.ErrCapturing, and nothing of that step runs; so does an error the
// step function returns. Other tensors may be read and written, from any
// goroutine: the step's work comes after them, as when recorded.
type Replayer struct {
	d      *vk.Device
	keys   map[string]*replayKey
	graphs int // kept, over all keys
	// Counts of steps run each way; Diverted counts the steps of Recorded
	// that no graph could serve: their key had graphs their work did not
	// match, or they keep a tensor they made.
	Recorded, Captured, Replayed, Diverted int
	// LastDiverted says why the last diverted step did not match its key's
	// first graph: the first command that differs and what differs in it.
	LastDiverted string
}

// replayKey is what a Replayer keeps for one key.
type replayKey struct {
	steps  int
	graphs []replayGraph
	seen   []replayGraph // recent recorded traces (descriptions only, no graph), newest last
}

// replayGraph is a graph and the trace it was captured from.
type replayGraph struct {
	sum uint64
	tr  *vk.Trace
	g   *vk.Graph
}

// NewReplayer returns a Replayer for steps on d.
func NewReplayer(d *vk.Device) *Replayer {
	return &Replayer{d: d, keys: map[string]*replayKey{}}
}

// maxGraphs bounds the graphs a Replayer keeps; past it, steps that match
// none are recorded. maxSeen bounds the recorded traces a key remembers.
const (
	maxGraphs = 8
	maxSeen   = 4
)

// Step runs step for key: recorded on the key's first call, then traced,
// and replayed, captured or recorded as the trace says (see Replayer).
func (r *Replayer) Step(key string, step func() error) error {
	k := r.keys[key]
	if k == nil {
		k = &replayKey{}
		r.keys[key] = k
	}
	k.steps++
	if k.steps == 1 {
		r.Recorded++
		return step()
	}
	t, err := r.trace(step)
	if err != nil {
		return fmt.Errorf("tensor: step %q: %w", key, err)
	}
	if t.Keeps() {
		// The step made a tensor it keeps (an output): a graph would write
		// the one made when it was captured, never this one.
		r.Recorded++
		r.Diverted++
		r.LastDiverted = fmt.Sprintf("step %q keeps a tensor it made: write its outputs into tensors made before the step", key)
		return t.Record()
	}
	sum := t.Sum()
	for i := 0; i < len(k.graphs); i++ {
		e := k.graphs[i]
		if e.sum != sum || !e.tr.Same(t) {
			continue
		}
		if e.g.Stale() { // cannot happen while the trace binds live buffers; kept as a guard
			break
		}
		t.Release()
		if err := e.g.Replay(); err != nil {
			return err
		}
		r.Replayed++
		return nil
	}
	r.dropStale(k)
	if r.graphs < maxGraphs && (len(k.graphs) == 0 || k.wasSeen(sum, t)) {
		g, err := t.Capture()
		if err != nil {
			return fmt.Errorf("tensor: capture step %q: %w", key, err)
		}
		if err := g.Replay(); err != nil {
			g.Close()
			return err
		}
		k.graphs = append(k.graphs, replayGraph{sum, t, g})
		r.graphs++
		r.Captured++
		return nil
	}
	r.Recorded++
	if len(k.graphs) > 0 {
		r.Diverted++
		r.LastDiverted = fmt.Sprintf("step %q: %s", key, t.Difference(k.graphs[0].tr))
	}
	k.remember(sum, t)
	return t.Record()
}

// dropStale closes the key's graphs that bind a freed tensor: no step can
// match them again, and they hold their temporaries.
func (r *Replayer) dropStale(k *replayKey) {
	kept := k.graphs[:0]
	for _, e := range k.graphs {
		if e.g.Stale() {
			e.g.Close()
			r.graphs--
			continue
		}
		kept = append(kept, e)
	}
	clear(k.graphs[len(kept):])
	k.graphs = kept
}

// trace runs step traced and returns its trace, or the step's error or
// the trace's refusal (nothing recorded). A step that panics leaves no
// trace open.
func (r *Replayer) trace(step func() error) (*vk.Trace, error) {
	if err := r.d.BeginTrace(); err != nil {
		return nil, err
	}
	ended := false
	defer func() {
		if !ended {
			if t, _ := r.d.EndTrace(); t != nil {
				t.Release()
			}
		}
	}()
	serr := step()
	t, err := r.d.EndTrace()
	ended = true
	if serr != nil || err != nil {
		t.Release()
		return nil, errors.Join(serr, err)
	}
	return t, nil
}

// wasSeen reports whether the key recorded t's work before.
func (k *replayKey) wasSeen(sum uint64, t *vk.Trace) bool {
	for _, s := range k.seen {
		if s.sum == sum && s.tr.Same(t) {
			return true
		}
	}
	return false
}

// remember keeps t's description among the key's recent recorded traces.
func (k *replayKey) remember(sum uint64, t *vk.Trace) {
	if len(k.seen) == maxSeen {
		k.seen = append(k.seen[:0], k.seen[1:]...)
	}
	k.seen = append(k.seen, replayGraph{sum: sum, tr: t})
}

// Graphs is the number of captured graphs kept.
func (r *Replayer) Graphs() int { return r.graphs }

// Dispatches is the number of kernel launches the first graph of key
// replays, 0 without one.
func (r *Replayer) Dispatches(key string) int {
	if k := r.keys[key]; k != nil && len(k.graphs) > 0 {
		return k.graphs[0].g.Dispatches()
	}
	return 0
}

// Close closes every graph, waiting until no replay is pending, and frees
// the temporaries the graphs kept. It is idempotent.
func (r *Replayer) Close() error {
	var errs []error
	for _, k := range r.keys {
		for _, e := range k.graphs {
			errs = append(errs, e.g.Close())
		}
		k.graphs = nil
	}
	r.graphs = 0
	return errors.Join(errs...)
}
