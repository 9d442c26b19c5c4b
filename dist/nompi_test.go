//go:build !mpi

package dist_test

import (
	"errors"
	"testing"

	"github.com/vkamp/vkamp/dist"
)

// TestNoMPI: without the mpi tag NewMPI says how to get MPI.
func TestNoMPI(t *testing.T) {
	if _, err := dist.NewMPI(dist.Options{}); !errors.Is(err, dist.ErrNoMPI) {
		t.Fatalf("got %v, want ErrNoMPI", err)
	}
}
