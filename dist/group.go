package dist

import (
	"errors"
	"fmt"
	"time"
)

// Group is a set of ranks that run collectives together. Every rank must
// call the same collectives in the same order with slices of the same
// length; a collective returns once every rank has taken part (or after the
// group's timeout, with an error). A Group's methods are not safe for
// concurrent use by several goroutines of one rank.
type Group interface {
	// Rank is this rank's index in [0, Size()).
	Rank() int
	// Size is the number of ranks.
	Size() int
	// AllReduceSum replaces x with the element-wise sum of every rank's x;
	// every rank gets the same bits.
	AllReduceSum(x []float32) error
	// Broadcast replaces x on every rank with root's x.
	Broadcast(x []float32, root int) error
	// Max returns the maximum of every rank's v.
	Max(v float32) (float32, error)
	// Barrier returns once every rank has called it.
	Barrier() error
	// Close leaves the group; it is idempotent. Ranks still waiting for
	// this one in a collective fail rather than wait.
	Close() error
}

// Errors matched with errors.Is.
var (
	// ErrTimeout is a collective that did not complete within the group's
	// timeout: a peer died, hangs, or called another collective.
	ErrTimeout = errors.New("dist: collective timed out (a peer died, hangs, or called another collective)")
	// ErrBroken is a collective on a group where an earlier one failed.
	ErrBroken = errors.New("dist: the group is broken by an earlier failure")
	// ErrClosed is a collective on a closed group.
	ErrClosed = errors.New("dist: group closed")
	// ErrNoMPI is NewMPI in a build without the mpi tag.
	ErrNoMPI = errors.New("dist: built without MPI: rebuild with -tags mpi (needs the packages libopenmpi-dev and openmpi-bin) and launch with mpirun")
)

// Options configure a group.
type Options struct {
	// Timeout bounds each collective's wait for the other ranks; 0 means
	// ten minutes, as long as vk waits for a device (a step on a software
	// driver on a loaded machine can take minutes). It must cover the
	// slowest rank's step, since a collective waits for it.
	Timeout time.Duration
}

func (o Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return 10 * time.Minute
}

// Single is the group of one rank: collectives leave their input as it is.
type Single struct{}

func (Single) Rank() int                      { return 0 }
func (Single) Size() int                      { return 1 }
func (Single) AllReduceSum([]float32) error   { return nil }
func (Single) Max(v float32) (float32, error) { return v, nil }
func (Single) Barrier() error                 { return nil }
func (Single) Close() error                   { return nil }
func (Single) Broadcast(_ []float32, root int) error {
	checkRoot(Single{}, root)
	return nil
}

// checkRoot panics unless root is a rank of g.
func checkRoot(g Group, root int) {
	if root < 0 || root >= g.Size() {
		panic(fmt.Sprintf("dist: Broadcast from root %d in a group of %d", root, g.Size()))
	}
}

// MaxFlag returns whether v is true on any rank.
func MaxFlag(g Group, v bool) (bool, error) {
	f := float32(0)
	if v {
		f = 1
	}
	m, err := g.Max(f)
	return m != 0, err
}

// AllReduceAvg replaces x with the element-wise mean of every rank's x: the
// sum divided by the size, the same bits on every rank.
func AllReduceAvg(g Group, x []float32) error {
	if err := g.AllReduceSum(x); err != nil {
		return err
	}
	if n := float32(g.Size()); n != 1 {
		for i := range x {
			x[i] /= n
		}
	}
	return nil
}

// Root runs f on rank 0 only (a checkpoint write) and then waits for every
// rank; if f failed, every rank returns an error (rank 0 returns f's).
func Root(g Group, f func() error) error {
	var err error
	if g.Rank() == 0 {
		err = f()
	}
	failed, cerr := MaxFlag(g, err != nil)
	switch {
	case err != nil:
		return err
	case cerr != nil:
		return cerr
	case failed:
		return fmt.Errorf("dist: rank 0 failed (its error is in its log)")
	}
	return nil
}
