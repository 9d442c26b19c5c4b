package tensor

import "sync"

// Scope releases a group of tensors together, such as the temporaries of one
// training step. It is safe for concurrent use.
type Scope struct {
	mu sync.Mutex
	ts []*Tensor
}

// Track adds t to the scope and returns it.
func (s *Scope) Track(t *Tensor) *Tensor {
	s.mu.Lock()
	s.ts = append(s.ts, t)
	s.mu.Unlock()
	return t
}

// Release releases every tracked tensor and empties the scope.
func (s *Scope) Release() {
	s.mu.Lock()
	ts := s.ts
	s.ts = nil
	s.mu.Unlock()
	for _, t := range ts {
		t.Release()
	}
}
