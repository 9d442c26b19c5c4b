package tensor

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/vkamp/vkamp/vk"
)

// Replayer runs a training step as a captured graph (vk.Graph) when the
// step repeats, and records it op by op when it does not: the first time a
// key is seen the step runs normally (optimizer state and pipelines are made
// then), the second time it is captured and replayed, and from then on it
// is replayed, with one command for the whole step. A key the Replayer has
// not seen twice, such as an epoch's last, partial batch, runs normally.
//
// The key names what the recorded work depends on: the input shapes, and
// every value a kernel takes as a push constant (Dropout's seed, a
// learning rate given as a number; DropoutSeeded and the optimizers'
// LRTensor read theirs on the device instead). What a replay reads must live in tensors the step uses
// and that stay alive between steps: write the next batch (and seed, and
// rate) into the same tensors (SetBytes) before each Step. State kept on the device (the
// optimizer's moments and step count, the loss scale, the skip flag of an
// overflowed step) is read and written by the replay itself, so a replayed
// step gives the same bits as a recorded one.
//
// A step whose graph exists is recorded instead of replayed when, since
// the step before, the host wrote a tensor the graph does not use: the
// mark of a batch written into a new tensor each step (or into two in
// turns), where a replay would read the tensor it was captured with, and
// train on it again. Such steps count in Recorded and in Diverted, and
// give a recorded step's results. Data made on the device outside the step
// (a slice of a dataset kept there), or picked from tensors written before
// the capture, is not seen: copy it into the tensors the graph reads.
//
// While a step is captured, host reads and writes of tensors are refused
// (they could not be replayed): Step returns the refusal, wrapping
// vk.ErrCapturing, and nothing of that step runs. Releasing a tensor that a
// graph uses, after the capture, makes its next Step record and capture
// again.
//
// A key's graphs are kept per step function (its code, as reflect tells
// it): a training step and an evaluation step keyed alike, by their
// shapes, are captured and replayed each as itself, never one for the
// other. A function value is not told apart by what it captured: two
// closures of one literal, or one method of two receivers, share a key's
// graph. A closure made by a helper that the compiler inlined at two call
// sites may be two functions, with a graph each: pass one function value
// where a step must replay the same graph.
type Replayer struct {
	d      *vk.Device
	graphs map[stepKey]*vk.Graph
	seen   map[stepKey]int
	// last is the graph of lastKey, the key last replayed: a training
	// loop steps one key, and on a drained device hashing it again costs
	// about a tenth of a replay.
	lastKey stepKey
	last    *vk.Graph
	// writes is the device's HostWrites when the last step ended.
	writes uint64
	// Counts of steps run each way; Diverted counts the steps of Recorded
	// that had a graph but found a tensor it does not use written.
	Recorded, Captured, Replayed, Diverted int
}

// stepKey is what a graph is kept under: the caller's key and the code
// address of the step function.
type stepKey struct {
	key string
	fn  uintptr
}

// NewReplayer returns a Replayer for steps on d.
func NewReplayer(d *vk.Device) *Replayer {
	return &Replayer{d: d, graphs: map[stepKey]*vk.Graph{}, seen: map[stepKey]int{}}
}

// maxGraphs bounds the graphs a Replayer keeps; past it, steps of new keys
// run normally.
const maxGraphs = 8

// Step runs step for key: replayed if a graph of key and step's function
// exists, captured and replayed on their second step, recorded otherwise.
// step must record the same work each time it is called with the same key.
func (r *Replayer) Step(key string, step func() error) error {
	defer func() { r.writes = r.d.HostWrites() }()
	k := stepKey{key, reflect.ValueOf(step).Pointer()}
	g := r.last
	if g == nil || k != r.lastKey {
		g = r.graphs[k]
	}
	if g != nil && g.Stale() { // a buffer of the graph was freed: recorded and captured afresh
		g.Close()
		delete(r.graphs, k)
		r.seen[k] = 0
		r.last, g = nil, nil
	}
	if g != nil && g.OutsideWrite() > r.writes {
		r.Recorded++
		r.Diverted++
		return step()
	}
	if g != nil {
		err := g.Replay()
		if !errors.Is(err, vk.ErrStaleGraph) {
			if err == nil {
				r.Replayed++
				r.lastKey, r.last = k, g
			}
			return err
		}
		// A buffer of the graph was freed: the step is recorded and
		// captured afresh.
		g.Close()
		delete(r.graphs, k)
		r.seen[k] = 0
		r.last = nil
	}
	r.seen[k]++
	if r.seen[k] < 2 || len(r.graphs) >= maxGraphs {
		r.Recorded++
		return step()
	}
	if err := r.d.BeginCapture(); err != nil {
		return fmt.Errorf("tensor: capture step %q: %w", key, err)
	}
	ended := false
	defer func() {
		// A step that panics (a shape mismatch) leaves no capture open.
		if !ended {
			if g, _ := r.d.EndCapture(); g != nil {
				g.Close()
			}
		}
	}()
	serr := step()
	g, err := r.d.EndCapture()
	ended = true
	if err != nil || serr != nil {
		g.Close()
		return fmt.Errorf("tensor: capture step %q: %w", key, errors.Join(serr, err))
	}
	if err := g.Replay(); err != nil {
		g.Close()
		return err
	}
	r.graphs[k] = g
	r.Captured++
	return nil
}

// Graphs is the number of captured graphs kept.
func (r *Replayer) Graphs() int { return len(r.graphs) }

// Dispatches is the number of kernel launches a graph of key replays (of
// its step function's, if only one was stepped with key), 0 without one.
func (r *Replayer) Dispatches(key string) int {
	for k, g := range r.graphs {
		if k.key == key {
			return g.Dispatches()
		}
	}
	return 0
}

// Close closes every graph, waiting until no replay is pending, and frees
// the temporaries the graphs kept. It is idempotent.
func (r *Replayer) Close() error {
	var errs []error
	for k, g := range r.graphs {
		errs = append(errs, g.Close())
		delete(r.graphs, k)
	}
	r.last = nil
	return errors.Join(errs...)
}
