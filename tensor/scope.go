package tensor

import "sync"

// Scope releases a group of tensors together, such as the temporaries of one
// training step. It is safe for concurrent use.
type Scope struct {
	mu      sync.Mutex
	ts      []*Tensor
	buf     [32]*Tensor // ts's first storage: a step's scope grows no slice
	bufGone bool        // Release handed buf's tensors out; later ones go elsewhere
}

// Track adds t to the scope and returns it.
func (s *Scope) Track(t *Tensor) *Tensor {
	s.mu.Lock()
	if s.ts == nil && !s.bufGone {
		s.ts = s.buf[:0]
	}
	s.ts = append(s.ts, t)
	s.mu.Unlock()
	return t
}

// Len returns the number of tracked tensors.
func (s *Scope) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ts)
}

// ReleaseFrom releases the tensors tracked after the first n, except keep,
// which stays tracked.
func (s *Scope) ReleaseFrom(n int, keep *Tensor) {
	s.mu.Lock()
	var drop []*Tensor
	if n < len(s.ts) {
		drop = append(drop, s.ts[n:]...)
		s.ts = s.ts[:n]
	}
	for _, t := range drop {
		if t == keep {
			s.ts = append(s.ts, t)
		}
	}
	s.mu.Unlock()
	for _, t := range drop {
		if t != keep {
			t.Release()
		}
	}
}

// Release releases every tracked tensor and empties the scope.
func (s *Scope) Release() {
	s.mu.Lock()
	ts := s.ts
	s.ts = nil
	s.bufGone = s.bufGone || len(ts) > 0 // ts may be buf, read below unlocked
	s.mu.Unlock()
	for _, t := range ts {
		t.Release()
	}
}
