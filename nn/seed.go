package nn

import (
	"encoding/binary"
	"sync"

	"github.com/vkamp/vkamp/tensor"
)

// SeedSource hands out dropout seeds, one per Graph, from a run's seed and a
// step counter that advances with each draw: a training loop that makes one
// Graph per step gets a new mask every step, and a run from the same seed
// gets the same masks again. A Graph draws once, at its first Dropout, so
// graphs without dropout (evaluation) do not advance the source.
//
// To resume a run bit-exactly, save Step with the checkpoint and give the
// resumed run a source of the same seed set to that step (SetStep). A
// SeedSource is safe for concurrent use, but graphs recorded concurrently
// from one source draw in whatever order they reach their first Dropout:
// give each goroutine its own source when the masks must be reproducible.
type SeedSource struct {
	mu   sync.Mutex
	seed uint64
	step uint64
}

// NewSeedSource returns a source of dropout seeds for the run seed, at
// step 0.
func NewSeedSource(seed uint64) *SeedSource { return &SeedSource{seed: seed} }

// Next returns the seed of the current step and advances to the next.
func (s *SeedSource) Next() uint32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := splitmix64(s.seed ^ splitmix64(s.step))
	s.step++
	return uint32(v >> 32)
}

// NextTo writes the seed of the current step into t, a graph's
// Options.DeviceSeed (one Int32 element), and advances to the next step:
// the masks of the draw the graph would make itself. The write is ordered
// after the work recorded before it; while a step is captured it is
// refused, so write the seed before the step.
func (s *SeedSource) NextTo(t *tensor.Tensor) error {
	return t.SetBytes(binary.LittleEndian.AppendUint32(nil, s.Next()))
}

// Seed returns the run seed.
func (s *SeedSource) Seed() uint64 { s.mu.Lock(); defer s.mu.Unlock(); return s.seed }

// Step returns the number of seeds drawn so far (or set by SetStep).
func (s *SeedSource) Step() uint64 { s.mu.Lock(); defer s.mu.Unlock(); return s.step }

// SetStep makes the next draw the one of step n, as after n draws.
func (s *SeedSource) SetStep(n uint64) { s.mu.Lock(); defer s.mu.Unlock(); s.step = n }

// reset restarts the source at seed, step 0.
func (s *SeedSource) reset(seed uint64) { s.mu.Lock(); defer s.mu.Unlock(); s.seed, s.step = seed, 0 }

// splitmix64 is SplitMix64's finaliser (Steele, Lea and Flood, 2014).
func splitmix64(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

// defaultSeeds is the source of graphs whose Options give none, as
// PyTorch's default generator: it starts at seed 0 in every process.
var defaultSeeds = NewSeedSource(0)

// DefaultSeeds returns the source that graphs whose Options.Seeds is nil
// draw from, shared by every such graph of the process (on every device).
// Its Step is what a checkpoint of a run that uses it must carry.
func DefaultSeeds() *SeedSource { return defaultSeeds }

// ManualSeed restarts the default source at seed, step 0, as
// torch.manual_seed: the graphs that follow draw the same masks as after
// any other ManualSeed(seed).
func ManualSeed(seed uint64) { defaultSeeds.reset(seed) }
