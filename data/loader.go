// Package data feeds training steps with batches, as PyTorch's DataLoader
// does: samples from host slices, MNIST IDX sets or a token stream,
// shuffled with a seed or drawn at random, cut into batches, gathered and
// uploaded to the device by a background goroutine while the device runs
// the step before.
//
// A Loader owns two device tensors per input and target (per batch size):
// batch k is written into pair k mod 2, and batch k+1 is prepared while the
// caller records and the device runs step k. So a batch's tensors stay
// valid until the second Next after the one that returned them: a step
// must be recorded (or replayed) before then. A tensor.Replayer then gets
// a graph for each pair, and replays them in turns.
package data

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Options configure a Loader.
type Options struct {
	// Batch is the samples per batch; it must be positive.
	Batch int
	// Shuffle visits an epoch's samples in a random order, a new one each
	// epoch, drawn from Seed and the epoch's number: the same seed gives
	// the same batches.
	Shuffle bool
	Seed    uint64
	// DropLast leaves out an epoch's last, partial batch.
	DropLast bool
	// Random draws every batch's samples uniformly, with replacement, from
	// Seed, without end: there are no epochs (nanoGPT's get_batch).
	Random bool
	// XDType is the inputs' dtype on the device for a Float32 source:
	// Float32 (the zero value), Float16 or BFloat16, converted on the host
	// (round to nearest even), off the caller's goroutine.
	XDType tensor.DType
	// Sync prepares each batch inside Next, on the caller's goroutine, with
	// no background goroutine.
	Sync bool
}

// Batch is one batch on the device. X and Y belong to the Loader (see the
// package doc for how long they stay valid).
type Batch struct {
	X, Y  *tensor.Tensor
	Size  int // samples; the last batch of an epoch may hold fewer
	Epoch int
	Index int // within its epoch
}

// Loader makes batches of a Source on a device.
type Loader struct {
	d     *vk.Device
	src   Source
	o     Options
	xdt   tensor.DType
	xn    int              // input elements per sample
	yn    int              // target elements per sample
	pairs map[int]*[2]pair // device tensors by batch size
	k     int              // batches made so far
	rng   *rand.Rand       // Random's draws
	epoch int              // of the next batch
	index int              // its index in the epoch
	order []int            // the epoch's sample order
	pos   int              // next position in order
	xb    []byte           // host staging for one batch's inputs
	yb    []byte           // and targets
	x16   []uint16         // inputs encoded for a 16-bit XDType
	f32   []float32        // inputs decoded for encoding
	ready chan made        // background: made batches, one ahead
	want  chan struct{}    // background: leave to make the next one
	done  chan struct{}    // closed by Close
	wg    sync.WaitGroup   // the background goroutine
	mu    sync.Mutex       // Close against Next
	shut  bool
}

type pair struct{ x, y *tensor.Tensor }

// made is a batch, or the end of an epoch (ok false), or an error.
type made struct {
	b   Batch
	ok  bool
	err error
}

// ErrClosed is returned by Next after Close.
var ErrClosed = errors.New("data: the loader is closed")

// New returns a Loader of src's samples on d, making its first batch at
// once unless o.Sync.
func New(d *vk.Device, src Source, o Options) (*Loader, error) {
	xs, ys := src.Shapes()
	if o.Batch < 1 {
		return nil, fmt.Errorf("data: batch %d: want at least 1", o.Batch)
	}
	if src.Len() < 1 {
		return nil, fmt.Errorf("data: the source has no samples")
	}
	if o.DropLast && !o.Random && src.Len() < o.Batch {
		return nil, fmt.Errorf("data: %d samples make no whole batch of %d (DropLast)", src.Len(), o.Batch)
	}
	xdt := src.XDType()
	switch {
	case xdt == tensor.Int32 && o.XDType != tensor.Float32:
		return nil, fmt.Errorf("data: XDType %s for int32 inputs: they stay int32", o.XDType)
	case xdt == tensor.Float32 && o.XDType != tensor.Float32:
		if o.XDType != tensor.Float16 && o.XDType != tensor.BFloat16 {
			return nil, fmt.Errorf("data: XDType %s: want Float32, Float16 or BFloat16", o.XDType)
		}
		xdt = o.XDType
	}
	l := &Loader{d: d, src: src, o: o, xdt: xdt, xn: prod(xs), yn: prod(ys), pairs: map[int]*[2]pair{},
		rng: rand.New(rand.NewPCG(o.Seed, 0x5eed))}
	l.xb, l.yb = make([]byte, 4*o.Batch*l.xn), make([]byte, 4*o.Batch*l.yn)
	l.newEpoch()
	if !o.Sync {
		l.ready, l.want, l.done = make(chan made, 1), make(chan struct{}, 1), make(chan struct{})
		l.want <- struct{}{} // the first batch may be made at once
		l.wg.Add(1)
		go l.run()
	}
	return l, nil
}

// Next returns the next batch, or ok false at the end of an epoch (the
// call after starts the next one). With Random there is no end.
func (l *Loader) Next() (b Batch, ok bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shut {
		return Batch{}, false, ErrClosed
	}
	if l.o.Sync {
		m := l.make()
		return m.b, m.ok, m.err
	}
	m := <-l.ready
	// The caller has recorded the step of the batch before this one: the
	// pair it used may be written again.
	l.want <- struct{}{}
	return m.b, m.ok, m.err
}

// run makes batches ahead of Next, one at a time, each when Next gives
// leave.
func (l *Loader) run() {
	defer l.wg.Done()
	for {
		select {
		case <-l.want:
		case <-l.done:
			return
		}
		m := l.make()
		select {
		case l.ready <- m:
		case <-l.done:
			return
		}
	}
}

// make makes the next batch, or the end of an epoch.
func (l *Loader) make() made {
	n := l.o.Batch
	idx := make([]int, 0, n)
	if l.o.Random {
		for range n {
			idx = append(idx, l.rng.IntN(l.src.Len()))
		}
	} else {
		limit := len(l.order)
		if l.o.DropLast {
			limit -= limit % n
		}
		if l.pos >= limit {
			l.epoch++
			l.newEpoch()
			return made{}
		}
		n = min(n, limit-l.pos)
		idx = append(idx, l.order[l.pos:l.pos+n]...)
		l.pos += n
	}
	p, err := l.pair(n, l.k%2)
	if err != nil {
		return made{err: err}
	}
	l.k++
	xb, yb := l.xb[:4*n*l.xn], l.yb[:4*n*l.yn]
	l.src.Fill(idx, xb, yb)
	if err := errors.Join(l.upload(p.x, xb), p.y.SetBytes(yb)); err != nil {
		return made{err: fmt.Errorf("data: upload a batch: %w", err)}
	}
	b := Batch{X: p.x, Y: p.y, Size: n, Epoch: l.epoch, Index: l.index}
	l.index++
	return made{b: b, ok: true}
}

// upload writes a batch's inputs, encoding them to a 16-bit XDType.
func (l *Loader) upload(x *tensor.Tensor, xb []byte) error {
	if l.xdt != tensor.Float16 && l.xdt != tensor.BFloat16 {
		return x.SetBytes(xb)
	}
	m := len(xb) / 4
	l.f32 = slices.Grow(l.f32[:0], m)[:m]
	for i := range l.f32 {
		l.f32[i] = math.Float32frombits(binary.LittleEndian.Uint32(xb[4*i:]))
	}
	l.x16 = slices.Grow(l.x16[:0], m)[:m]
	tensor.Encode16(l.xdt, l.x16, l.f32)
	return x.Write16s(func(dst []uint16) { copy(dst, l.x16) })
}

// pair returns the device tensors of batches of n in slot s.
func (l *Loader) pair(n, s int) (pair, error) {
	ps := l.pairs[n]
	if ps == nil {
		ps = new([2]pair)
		l.pairs[n] = ps
	}
	if ps[s].x == nil {
		xs, ys := l.src.Shapes()
		x := tensor.New(l.d, l.xdt, append([]int{n}, xs...)...)
		y := tensor.New(l.d, tensor.Int32, append([]int{n}, ys...)...)
		if err := errors.Join(x.Err(), y.Err()); err != nil {
			x.Release()
			y.Release()
			return pair{}, fmt.Errorf("data: batch tensors: %w", err)
		}
		ps[s] = pair{x, y}
	}
	return ps[s], nil
}

// newEpoch orders the epoch's samples.
func (l *Loader) newEpoch() {
	l.pos, l.index = 0, 0
	if l.o.Random {
		return
	}
	if l.order == nil {
		l.order = make([]int, l.src.Len())
	}
	for i := range l.order {
		l.order[i] = i
	}
	if l.o.Shuffle {
		r := rand.New(rand.NewPCG(l.o.Seed, uint64(l.epoch)))
		r.Shuffle(len(l.order), func(i, j int) { l.order[i], l.order[j] = l.order[j], l.order[i] })
	}
}

// Close stops the background goroutine, waiting for a batch it is
// uploading, and releases the batch tensors. It is idempotent.
func (l *Loader) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shut {
		return nil
	}
	l.shut = true
	if l.done != nil {
		close(l.done)
		l.wg.Wait()
	}
	for _, ps := range l.pairs {
		for _, p := range ps {
			if p.x != nil {
				p.x.Release()
				p.y.Release()
			}
		}
	}
	return nil
}
