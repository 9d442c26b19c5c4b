package dist

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
)

// The overlap of DataParallel: gradient buckets reduced on a goroutine as
// backward finishes them.
//
// A step's buckets are laid out at its first GradReady (or at
// AllReduceGrads): the trainable parameters in reverse order, as PyTorch's
// DDP, since backward finishes the last layers first. When every
// parameter of a bucket is ready, GradReady submits the recorded work
// (vk's Flush), so that the device starts on it, and marks the bucket
// ready. One goroutine at a time reduces the ready buckets strictly in
// bucket order, so that every rank calls the same collectives in the same
// order and the Group is never used by two goroutines of one rank. For
// each bucket it polls the device until the work of the mark has run
// (vk's Reached, which holds the device's lock only for the poll, so
// backward keeps recording meanwhile: at most one host wait per bucket),
// reads the gradients, and keeps their mean in host memory. Memory the
// host maps (lavapipe, SwiftShader, integrated GPUs) is then read without
// another wait; on memory it cannot map each tensor's read still stages a
// copy and waits for it. Submitting only when the goroutine comes to a
// bucket (fewer, larger batches, no stalls) measured no faster on
// lavapipe: about 1.0 of the after-backward step against 0.9 to 1.03.
// AllReduceGrads marks the buckets backward did not, waits for the
// goroutine, and writes the means back in order with the recorded work.
// The goroutine ends whenever the next bucket is not ready yet, so an
// abandoned step leaks none.

// firstBucket caps the first bucket, in float32s: 1 MiB, as PyTorch's
// DDP, so that the first reduction starts early in backward.
const firstBucket = 1 << 20 / 4

// bucket is one collective's gradients.
type bucket struct {
	params []*nn.Param
	grads  []*tensor.Tensor // the params' Grad when the bucket was laid out
	left   int              // params not yet ready in this step
	ready  bool
	mark   uint64    // the device work that computes grads
	x      []float32 // their values, then their mean
}

// step is the reduction state of one training step.
type step struct {
	mu      sync.Mutex
	idle    *sync.Cond // running fell to false
	begun   bool       // this step's buckets are laid out
	buckets []*bucket
	of      map[*nn.Param]*bucket
	seen    map[*nn.Param]bool // GradReady calls of this step
	next    int                // the next bucket to reduce
	running bool               // a goroutine reduces
	err     error              // the first failure of this step
	pool    [][]float32        // host memory of the buckets, kept across steps
}

// GradReady is the nn.Options.GradReady hook of a step's graph: the
// parameter's gradient is final, and once a bucket's are all final its
// reduction starts, overlapping the rest of backward. Pass it as
//
//	nn.NewGraph(d, nn.Options{..., GradReady: dp.GradReady})
//
// on the graph whose Backward completes the step's gradients (with
// gradient accumulation, the last micro-batch's only: a gradient reported
// twice before AllReduceGrads is an error it returns). Without the hook
// AllReduceGrads reduces every bucket after backward, with the same
// result, bit for bit. A single rank's hook does nothing.
func (dp *DataParallel) GradReady(p *nn.Param) {
	if dp.g.Size() == 1 {
		return
	}
	s := &dp.st
	s.mu.Lock()
	defer s.mu.Unlock()
	dp.begin()
	b := s.of[p]
	if b == nil {
		return // not trainable here, or not dp's
	}
	if s.seen[p] {
		s.fail(fmt.Errorf("dist: the gradient of %s was reported ready twice before AllReduceGrads (with gradient accumulation, set GradReady on the last micro-batch's graph only)", p.Name))
		return
	}
	s.seen[p] = true
	if b.left--; b.left == 0 {
		dp.mark(b)
		dp.kick()
	}
}

// begin lays out the step's buckets, once per step. s.mu is held.
func (dp *DataParallel) begin() {
	s := &dp.st
	if s.begun {
		return
	}
	s.begun = true
	s.buckets, s.next, s.err = s.buckets[:0], 0, nil
	clear(s.of)
	clear(s.seen)
	var cur *bucket
	n := 0
	for i := len(dp.params) - 1; i >= 0; i-- {
		p := dp.params[i]
		if p.Frozen || p.Grad == nil {
			continue
		}
		if dt := p.Grad.DType(); dt != tensor.Float32 {
			panic(&tensor.DTypeError{Op: "dist.DataParallel", Got: dt, Want: "float32 parameters and gradients"})
		}
		limit := dp.bucket
		if len(s.buckets) == 1 {
			limit = min(limit, firstBucket)
		}
		if cur == nil || n+p.Grad.Len() > limit {
			cur, n = &bucket{}, 0
			s.buckets = append(s.buckets, cur)
		}
		cur.params = append(cur.params, p)
		cur.grads = append(cur.grads, p.Grad)
		cur.left++
		n += p.Grad.Len()
		s.of[p] = cur
	}
	for i, b := range s.buckets {
		n := 0
		for _, g := range b.grads {
			n += g.Len()
		}
		if i == len(s.pool) {
			s.pool = append(s.pool, nil)
		}
		if cap(s.pool[i]) < n {
			s.pool[i] = make([]float32, n)
		}
		b.x = s.pool[i][:n]
	}
}

// mark submits the work recorded so far, which computes b's gradients, and
// makes b ready to reduce. s.mu is held.
func (dp *DataParallel) mark(b *bucket) {
	b.ready = true
	m, err := dp.dev.Flush()
	if err != nil {
		dp.st.fail(fmt.Errorf("dist: submit the work of a gradient bucket: %w", err))
	}
	b.mark = m
}

// kick starts the goroutine if the next bucket is ready and none runs.
// s.mu is held.
func (dp *DataParallel) kick() {
	s := &dp.st
	if s.running || s.next == len(s.buckets) || !s.buckets[s.next].ready {
		return
	}
	s.running = true
	go dp.reduceReady()
}

// reduceReady reduces the ready buckets in order and returns at the first
// bucket not ready (GradReady starts another goroutine for it).
func (dp *DataParallel) reduceReady() {
	s := &dp.st
	s.mu.Lock()
	for s.next < len(s.buckets) && s.buckets[s.next].ready {
		b := s.buckets[s.next]
		s.next++
		failed := s.err != nil
		s.mu.Unlock()
		var err error
		if !failed { // after a failure the collectives stop, as the group's own do
			err = dp.reduce(b)
		}
		s.mu.Lock()
		if err != nil {
			s.fail(err)
		}
	}
	s.running = false
	s.idle.Broadcast()
	s.mu.Unlock()
}

// fail keeps the step's first error. s.mu is held.
func (s *step) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// reduce waits for b's gradients, reads them and averages them over the
// ranks into b.x. It runs on the goroutine, without s.mu.
func (dp *DataParallel) reduce(b *bucket) error {
	wait := 20 * time.Microsecond
	for {
		done, err := dp.dev.Reached(b.mark)
		if err != nil {
			return fmt.Errorf("dist: wait for a gradient bucket: %w", err)
		}
		if done {
			break
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Millisecond)
	}
	off := 0
	for _, g := range b.grads {
		if err := readInto(g, b.x[off:off+g.Len()]); err != nil {
			return err
		}
		off += g.Len()
	}
	return AllReduceAvg(dp.g, b.x)
}

// finish marks the buckets backward left, waits for every bucket, writes
// the means back into the gradients and ends the step.
func (dp *DataParallel) finish() error {
	s := &dp.st
	s.mu.Lock()
	dp.begin()
	for _, b := range s.buckets {
		if !b.ready {
			dp.mark(b)
		}
	}
	dp.kick()
	for s.running {
		s.idle.Wait()
	}
	err := s.err
	s.begun = false
	buckets := s.buckets
	s.mu.Unlock()
	if err != nil {
		return err
	}
	for _, b := range buckets {
		off := 0
		for _, g := range b.grads {
			if err := writeFrom(g, b.x[off:off+g.Len()], &dp.raw); err != nil {
				return err
			}
			off += g.Len()
		}
	}
	return nil
}

// littleEndian is whether the host stores a float32 as tensor's bytes do
// (little-endian): then a []float32 is read and written as those bytes
// directly, else converted element by element. Every host Vulkan runs on
// that vkamp supports (x86-64, arm64) is little-endian.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// asBytes is x's memory as bytes.
func asBytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// readInto waits for t, a Float32 tensor of len(x) elements, and copies
// its value into x.
func readInto(t *tensor.Tensor, x []float32) error {
	raw, err := t.Bytes()
	if err != nil {
		return err
	}
	if littleEndian {
		copy(asBytes(x), raw)
		return nil
	}
	for k := range x {
		x[k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
	}
	return nil
}

// writeFrom sets t's value, in order with the recorded work, to x; scratch
// is reused for the conversion a big-endian host needs.
func writeFrom(t *tensor.Tensor, x []float32, scratch *[]byte) error {
	if littleEndian {
		return t.SetBytes(asBytes(x))
	}
	raw := (*scratch)[:0]
	for _, v := range x {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
	}
	*scratch = raw
	return t.SetBytes(raw)
}
