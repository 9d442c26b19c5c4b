//go:build cgo

package vk

import (
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"unsafe"
)

// A trace records what a piece of host code would record, without
// recording it: the dispatches, copies and fills issued between
// BeginTrace and EndTrace are checked as always, then described instead
// of recorded. The description (Trace.Same) tells whether the code
// recorded exactly what an earlier trace did: the same kernels, launch
// sizes, push constants and bindings, where a buffer made during the trace
// counts by its order of making (a step's temporaries are new buffers each
// time) and any other by its identity. The Replayer in package tensor
// replays a step's graph only when the step's trace is the graph's.
//
// While tracing, host reads and writes of a buffer that a traced command
// already used return ErrCapturing (their order with the traced work would
// be lost; others are allowed), and a buffer a traced command uses that is
// freed is kept until the trace is recorded or released. A trace is then recorded as the work it describes (Record),
// captured into a graph (Capture), or dropped (Release).
type Trace struct {
	d     *Device
	id    uint64 // Device.traces when it began: the stamp of the buffers it binds
	cmds  []traced
	bufs  []*Buffer // the commands' bindings, in order
	push  []byte    // the commands' push constants, in order
	words []uint64  // the description Same compares
	at    []int     // where each command's words start
	ks    []*Kernel // each command's kernel, nil for a copy or fill
	temps uint64    // temporaries numbered so far
	held  []*Buffer // freed during the trace, used by it
	born  uint64    // Device.allocs when the trace began: later buffers are temporaries
	err   error     // the first refusal
	done  bool
	kept  bool // a buffer made during the trace and bound by it outlived it
}

// traced is one command of a trace: its bindings are bufs[arg:arg+nargs]
// (a copy: destination, source; a fill: the buffer), its push constants
// push[at:at+npush].
type traced struct {
	k                 *Kernel // nil for a copy or fill
	groups            [3]uint32
	arg, nargs        int
	at, npush         int
	dstOff, srcOff, n int64
	value             uint32
	fill              bool
}

var traceSeed = maphash.MakeSeed()

// BeginTrace starts a trace. It fails while a capture or another trace is
// open.
func (d *Device) BeginTrace() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.usable(); err != nil {
		return err
	}
	if d.capture != nil || d.trace != nil {
		return fmt.Errorf("vk: begin trace: %w: a capture or trace is already open", ErrCapturing)
	}
	d.traces++
	t := d.spareTrace
	if t == nil {
		t = &Trace{}
	}
	d.spareTrace = nil
	*t = Trace{d: d, id: d.traces, born: d.allocs, cmds: t.cmds[:0], bufs: t.bufs[:0], push: t.push[:0],
		words: t.words[:0], at: t.at[:0], ks: t.ks[:0]}
	d.trace = t
	return nil
}

// EndTrace ends the trace and returns it. If something was refused during
// it (a host read or write), the trace is released and the first refusal
// returned.
func (d *Device) EndTrace() (*Trace, error) {
	d.mu.Lock()
	t := d.trace
	if t == nil {
		d.mu.Unlock()
		return nil, fmt.Errorf("vk: end trace: %w: no trace is open", ErrInvalidArgument)
	}
	d.trace = nil
	t.kept = t.outlived()
	d.mu.Unlock()
	if t.err != nil {
		t.Release()
		return nil, t.err
	}
	return t, nil
}

// outlived reports whether a buffer made during the trace and bound by it
// is still alive at its end: an output of the traced code, which only
// recording the trace writes (a graph writes its own); the lock is held.
func (t *Trace) outlived() bool {
	for _, b := range t.bufs {
		r := b.root()
		if !b.wholeBlock && r.born > t.born && !r.freed && r.heldIn != t.id {
			return true
		}
	}
	return false
}

// Keeps reports whether the traced code kept a buffer it made and bound:
// its work then writes memory that a graph of an earlier, identical trace
// does not, so only Record gives its results.
func (t *Trace) Keeps() bool { return t.kept }

// Tracing reports whether a trace is open.
func (d *Device) Tracing() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.trace != nil
}

// Dispatches is the number of kernel launches the trace describes.
func (t *Trace) Dispatches() int {
	n := 0
	for _, c := range t.cmds {
		if c.k != nil {
			n++
		}
	}
	return n
}

// Sum is a hash of the description, for looking traces up; Same decides.
func (t *Trace) Sum() uint64 {
	var h maphash.Hash
	h.SetSeed(traceSeed)
	var b [8]byte
	for _, w := range t.words {
		binary.LittleEndian.PutUint64(b[:], w)
		h.Write(b[:])
	}
	return h.Sum64()
}

// Same reports whether t describes exactly the work that u does.
func (t *Trace) Same(u *Trace) bool { return slices.Equal(t.words, u.words) }

// Difference says where t's work first differs from u's, for diagnostics
// ("" if it does not): the command, its kernel, and what differs.
func (t *Trace) Difference(u *Trace) string {
	for i := 0; i < max(len(t.at), len(u.at)); i++ {
		if i >= len(t.at) || i >= len(u.at) {
			return fmt.Sprintf("%d commands, then %d", len(u.at), len(t.at))
		}
		a, b := t.command(i), u.command(i)
		if slices.Equal(a, b) {
			continue
		}
		name := "a copy or fill"
		if k := t.ks[i]; k != nil {
			name = k.name
		}
		part := "its bindings"
		switch {
		case a[0] != b[0] || a[1] != b[1]:
			part = "the command"
		case a[0] == tagDispatch && !slices.Equal(a[2:5], b[2:5]):
			part = "the launch size"
		case a[0] == tagDispatch && !slices.Equal(a[5:6+(a[5]+7)/8], b[5:6+(b[5]+7)/8]):
			part = "the push constants"
		case a[0] != tagDispatch && !slices.Equal(a[:4], b[:4]):
			part = "offsets, sizes or the fill value"
		}
		return fmt.Sprintf("command %d (%s): %s", i, name, part)
	}
	return ""
}

// command returns the words of command i.
func (t *Trace) command(i int) []uint64 {
	end := len(t.words)
	if i+1 < len(t.at) {
		end = t.at[i+1]
	}
	return t.words[t.at[i]:end]
}

// Record records the traced work as it would have been recorded, then
// frees the buffers freed during the trace.
func (t *Trace) Record() error {
	if t.done {
		return fmt.Errorf("vk: record trace: %w: already recorded or released", ErrInvalidArgument)
	}
	d := t.d
	d.mu.Lock()
	err := t.recordLocked()
	d.mu.Unlock()
	t.finish()
	return err
}

// recordLocked records the traced commands with the device lock held, so
// that no host access of another goroutine comes between them.
func (t *Trace) recordLocked() error {
	d := t.d
	for _, c := range t.cmds {
		args := t.bufs[c.arg : c.arg+c.nargs]
		var err error
		switch {
		case c.k != nil:
			err = d.dispatchLocked(c.k, c.groups, t.push[c.at:c.at+c.npush], args...)
		case c.fill:
			err = d.fillLocked(args[0], c.dstOff, c.n, c.value)
		default:
			err = d.copyLocked(args[0], c.dstOff, args[1], c.srcOff, c.n)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Capture records the traced work into a new graph, as BeginCapture and
// EndCapture around the traced code would have, under one hold of the
// device lock (a host access of another goroutine, such as a loader's
// upload, waits instead of failing the capture); the buffers freed during
// the trace become the graph's, freed when it closes.
func (t *Trace) Capture() (*Graph, error) {
	if t.done {
		return nil, fmt.Errorf("vk: capture trace: %w: already recorded or released", ErrInvalidArgument)
	}
	d := t.d
	d.mu.Lock()
	err := d.beginCaptureLocked()
	var g *Graph
	if err == nil {
		err = t.recordLocked()
		var cerr error
		g, cerr = d.endCaptureLocked()
		err = firstErr(err, cerr)
		if err == nil && g.err != nil {
			err = g.err
		}
		if err == nil {
			g.held = append(g.held, t.held...)
			t.held = nil
		}
	}
	d.mu.Unlock()
	if err != nil {
		if g != nil {
			g.Close()
		}
		t.finish()
		return nil, fmt.Errorf("vk: capture trace: %w", err)
	}
	t.finish()
	return g, nil
}

func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// Release drops the trace, its description too, without recording it, and
// frees the buffers freed during it. It is idempotent.
func (t *Trace) Release() {
	if t == nil || t.done {
		return
	}
	t.finish()
	t.words, t.at, t.ks = t.words[:0], t.at[:0], t.ks[:0]
	d := t.d
	d.mu.Lock()
	if d.spareTrace == nil {
		d.spareTrace = t // its slices serve the next trace
	}
	d.mu.Unlock()
}

// finish frees the buffers freed during the trace and drops its commands,
// keeping its description (Same, Difference).
func (t *Trace) finish() {
	t.done = true
	held := t.held
	clear(t.bufs)
	t.held, t.cmds, t.bufs, t.push = nil, t.cmds[:0], t.bufs[:0], t.push[:0]
	for _, b := range held {
		b.Free()
	}
}

// The description's words: a tag, then the command's fields.
const (
	tagDispatch = iota + 1
	tagCopy
	tagFill
	tagTemp  // a buffer made during the trace: its order, offset, size
	tagBuf   // another buffer: its identity, offset, size
	tagBlock // a whole block (Buffer.Block): the block's identity
)

// buffer appends b's description and stamps its root as used; the lock
// is held.
func (t *Trace) buffer(b *Buffer) {
	t.bufs = append(t.bufs, b)
	if b.wholeBlock {
		t.words = append(t.words, tagBlock, uint64(uintptr(unsafe.Pointer(b.blk))))
		b.traced = t.id
		return
	}
	r := b.root()
	off := b.off - r.off
	if r.born > t.born {
		if r.traced != t.id {
			r.tempID = t.temps
			t.temps++
		}
		r.traced = t.id
		t.words = append(t.words, tagTemp, r.tempID, off, b.size)
		return
	}
	r.traced = t.id
	// Identity is safe to compare: a graph that this trace may be compared
	// with holds its buffers, so no other buffer takes their addresses.
	t.words = append(t.words, tagBuf, uint64(uintptr(unsafe.Pointer(r))), off, b.size)
}

// dispatch describes a checked dispatch; the lock is held.
func (t *Trace) dispatch(k *Kernel, groups [3]uint32, push []byte, args []*Buffer) {
	t.at = append(t.at, len(t.words))
	t.ks = append(t.ks, k)
	t.words = append(t.words, tagDispatch, uint64(uintptr(unsafe.Pointer(k))),
		uint64(groups[0]), uint64(groups[1]), uint64(groups[2]), uint64(len(push)))
	for i := 0; i < len(push); i += 8 {
		var w [8]byte
		copy(w[:], push[i:])
		t.words = append(t.words, binary.LittleEndian.Uint64(w[:]))
	}
	c := traced{k: k, groups: groups, arg: len(t.bufs), nargs: len(args), at: len(t.push), npush: len(push)}
	t.push = append(t.push, push...)
	for _, b := range args {
		t.buffer(b)
	}
	t.cmds = append(t.cmds, c)
}

// copyCmd describes a checked copy; the lock is held.
func (t *Trace) copyCmd(dst *Buffer, dstOff int64, src *Buffer, srcOff, n int64) {
	t.at = append(t.at, len(t.words))
	t.ks = append(t.ks, nil)
	t.words = append(t.words, tagCopy, uint64(dstOff), uint64(srcOff), uint64(n))
	c := traced{arg: len(t.bufs), nargs: 2, dstOff: dstOff, srcOff: srcOff, n: n}
	t.buffer(dst)
	t.buffer(src)
	t.cmds = append(t.cmds, c)
}

// fillCmd describes a checked fill; the lock is held.
func (t *Trace) fillCmd(b *Buffer, off, n int64, value uint32) {
	t.at = append(t.at, len(t.words))
	t.ks = append(t.ks, nil)
	t.words = append(t.words, tagFill, uint64(off), uint64(n), uint64(value))
	c := traced{arg: len(t.bufs), nargs: 1, dstOff: off, n: n, value: value, fill: true}
	t.buffer(b)
	t.cmds = append(t.cmds, c)
}

// binds reports whether a traced command already used b's memory (b, its
// root, or its whole block): a host read or write of it now would not be in
// order with that command. Other buffers may be read and written while
// tracing, from any goroutine (a loader uploading the next batch): the
// traced work, recorded later, comes after them, as it would have.
func (t *Trace) binds(b *Buffer) bool {
	return b.root().traced == t.id || b.traced == t.id || (b.blk.whole != nil && b.blk.whole.traced == t.id)
}

// hold reports whether the trace keeps b, which is being freed: a traced
// command uses it, and it must live until the trace is recorded.
func (t *Trace) hold(b *Buffer) bool {
	if b.root().traced != t.id {
		return false
	}
	b.heldIn = t.id
	t.held = append(t.held, b)
	return true
}

// refuse returns err, remembering the first for EndTrace.
func (t *Trace) refuse(err error) error {
	if t.err == nil {
		t.err = err
	}
	return err
}
