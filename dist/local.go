package dist

import (
	"fmt"
	"sync"
	"time"
)

// NewLocal returns the n ranks of a group within this process, one for
// each goroutine that drives a device: rank i is the i-th element. Sums are
// taken on the host in rank order, so every rank gets the same bits.
func NewLocal(n int, o Options) []Group {
	if n < 1 {
		panic(fmt.Sprintf("dist: NewLocal of %d ranks", n))
	}
	h := &hub{n: n, timeout: o.timeout(), bufs: make([][]float32, n), cur: &round{done: make(chan struct{})}}
	gs := make([]Group, n)
	for i := range gs {
		gs[i] = &local{h: h, rank: i}
	}
	return gs
}

// round is one collective: done closes when it completed or failed (err).
type round struct {
	done chan struct{}
	err  error
}

// hub is what the ranks of a local group share.
type hub struct {
	mu      sync.Mutex
	n       int
	timeout time.Duration
	name    string      // the current round's collective
	length  int         // and its slices' length
	bufs    [][]float32 // each arrived rank's slice
	arrived int
	cur     *round
	acc     []float32
	err     error // sticky: the group is broken
}

type local struct {
	h      *hub
	rank   int
	closed bool
}

func (l *local) Rank() int { return l.rank }
func (l *local) Size() int { return l.h.n }

func (l *local) AllReduceSum(x []float32) error {
	return l.collective("AllReduceSum", x, func(bufs [][]float32) {
		h := l.h
		if cap(h.acc) < len(x) {
			h.acc = make([]float32, len(x))
		}
		acc := h.acc[:len(x)]
		copy(acc, bufs[0])
		for _, b := range bufs[1:] {
			for i, v := range b {
				acc[i] += v
			}
		}
		for _, b := range bufs {
			copy(b, acc)
		}
	})
}

func (l *local) Broadcast(x []float32, root int) error {
	checkRoot(l, root)
	return l.collective(fmt.Sprintf("Broadcast from %d", root), x, func(bufs [][]float32) {
		for _, b := range bufs {
			copy(b, bufs[root])
		}
	})
}

func (l *local) Max(v float32) (float32, error) {
	x := []float32{v}
	err := l.collective("Max", x, func(bufs [][]float32) {
		m := bufs[0][0]
		for _, b := range bufs[1:] {
			m = max(m, b[0])
		}
		for _, b := range bufs {
			b[0] = m
		}
	})
	return x[0], err
}

func (l *local) Barrier() error { return l.collective("Barrier", nil, func([][]float32) {}) }

// Close leaves the group: ranks waiting in a collective, or calling one
// later, fail with ErrBroken instead of waiting for the timeout.
func (l *local) Close() error {
	h := l.h
	h.mu.Lock()
	defer h.mu.Unlock()
	if !l.closed {
		l.closed = true
		h.fail(fmt.Errorf("%w: rank %d closed", ErrBroken, l.rank))
	}
	return nil
}

// fail breaks the group, failing the round in progress. h.mu is held.
func (h *hub) fail(err error) {
	if h.err != nil {
		return
	}
	h.err = err
	h.cur.err = err
	close(h.cur.done)
}

// collective joins the current round with x; the last rank to arrive runs
// f over every rank's slice and wakes the others.
func (l *local) collective(name string, x []float32, f func([][]float32)) error {
	h := l.h
	h.mu.Lock()
	if l.closed {
		h.mu.Unlock()
		return ErrClosed
	}
	if h.err != nil {
		err := h.err
		h.mu.Unlock()
		return err
	}
	if h.arrived == 0 {
		h.name = name
		h.length = len(x)
	} else if h.name != name || h.length != len(x) {
		err := fmt.Errorf("%w: rank %d called %s of %d elements while another called %s of %d", ErrBroken, l.rank, name, len(x), h.name, h.length)
		h.fail(err)
		h.mu.Unlock()
		return err
	}
	h.bufs[l.rank] = x
	h.arrived++
	r := h.cur
	if h.arrived == h.n {
		f(h.bufs)
		h.arrived = 0
		clear(h.bufs)
		h.cur = &round{done: make(chan struct{})}
		h.mu.Unlock()
		close(r.done)
		return nil
	}
	h.mu.Unlock()
	t := time.NewTimer(h.timeout)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		h.mu.Lock()
		select {
		case <-r.done: // completed as the timer fired
		default:
			h.fail(fmt.Errorf("%w: rank %d waited %v in %s for %d of %d ranks", ErrTimeout, l.rank, h.timeout, name, h.n-h.arrived, h.n))
		}
		h.mu.Unlock()
	}
	return r.err
}
