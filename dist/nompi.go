//go:build !mpi

package dist

// NewMPI returns ErrNoMPI: this build has no MPI binding (build with -tags
// mpi).
func NewMPI(Options) (Group, error) { return nil, ErrNoMPI }
