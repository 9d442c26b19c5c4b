//go:build mpi

package dist

/*
#cgo pkg-config: ompi-c
#include <mpi.h>
#include <stdlib.h>

// Wrappers keep MPI's handles and MPI_IN_PLACE, which is not a valid
// pointer, on the C side.
static int rankSize(int *rank, int *size) {
	int err = MPI_Comm_rank(MPI_COMM_WORLD, rank);
	return err != MPI_SUCCESS ? err : MPI_Comm_size(MPI_COMM_WORLD, size);
}
static int iallreduce(float *buf, int n, int isMax, MPI_Request *req) {
	return MPI_Iallreduce(MPI_IN_PLACE, buf, n, MPI_FLOAT, isMax ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD, req);
}
static int ibcast(float *buf, int n, int root, MPI_Request *req) {
	return MPI_Ibcast(buf, n, MPI_FLOAT, root, MPI_COMM_WORLD, req);
}
static int ibarrier(MPI_Request *req) { return MPI_Ibarrier(MPI_COMM_WORLD, req); }

static int initThread(int *provided) {
	int done = 0;
	MPI_Initialized(&done);
	if (done) {
		return MPI_Query_thread(provided);
	}
	int err = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
	if (err != MPI_SUCCESS) {
		return err;
	}
	// Errors come back as codes instead of aborting every process.
	return MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

static int testDone(MPI_Request *req, int *flag) { return MPI_Test(req, flag, MPI_STATUS_IGNORE); }
*/
import "C"

import (
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// mpiGroup is MPI_COMM_WORLD. Calls are serialised by mu
// (MPI_THREAD_SERIALIZED): goroutines may move between threads.
type mpiGroup struct {
	mu         sync.Mutex
	rank, size int
	timeout    time.Duration
	buf        unsafe.Pointer // C memory the nonblocking collectives work in
	cap        int            // its size in float32s
	err        error          // sticky: broken
	closed     bool
}

var mpiOnce struct {
	sync.Mutex
	made, finalized bool
}

// NewMPI initialises MPI (MPI_Init_thread, with MPI_ERRORS_RETURN on
// MPI_COMM_WORLD) and returns the group of every process mpirun started.
// Only one may be made per process; after its Close, MPI cannot be
// initialised again.
func NewMPI(o Options) (Group, error) {
	mpiOnce.Lock()
	defer mpiOnce.Unlock()
	if mpiOnce.made {
		return nil, fmt.Errorf("dist: NewMPI called twice in one process")
	}
	var provided C.int
	if rc := C.initThread(&provided); rc != C.MPI_SUCCESS {
		return nil, fmt.Errorf("dist: MPI_Init_thread: %s", errString(rc))
	}
	if provided < C.MPI_THREAD_SERIALIZED {
		return nil, fmt.Errorf("dist: MPI provides thread level %d, below MPI_THREAD_SERIALIZED", int(provided))
	}
	var rank, size C.int
	if rc := C.rankSize(&rank, &size); rc != C.MPI_SUCCESS {
		return nil, fmt.Errorf("dist: MPI_Comm_rank/size: %s", errString(rc))
	}
	mpiOnce.made = true
	return &mpiGroup{rank: int(rank), size: int(size), timeout: o.timeout()}, nil
}

func errString(rc C.int) string {
	var b [C.MPI_MAX_ERROR_STRING]C.char
	var n C.int
	if C.MPI_Error_string(rc, &b[0], &n) != C.MPI_SUCCESS {
		return fmt.Sprintf("MPI error %d", int(rc))
	}
	return C.GoStringN(&b[0], n)
}

func (g *mpiGroup) Rank() int { return g.rank }
func (g *mpiGroup) Size() int { return g.size }

// staging returns C memory for n float32s; Go memory must not stay with C
// after a call returns, and a nonblocking collective keeps its buffer.
func (g *mpiGroup) staging(n int) []float32 {
	if n > g.cap {
		C.free(g.buf)
		g.buf, g.cap = C.malloc(C.size_t(4*max(n, 1))), n
	}
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(g.buf), n)
}

// run starts a nonblocking collective and polls it until it completes,
// fails, or the timeout passes.
func (g *mpiGroup) run(name string, start func(req *C.MPI_Request) C.int) error {
	if g.closed {
		return ErrClosed
	}
	if g.err != nil {
		return g.err
	}
	var req C.MPI_Request
	if rc := start(&req); rc != C.MPI_SUCCESS {
		g.err = fmt.Errorf("%w: rank %d: %s: %s", ErrBroken, g.rank, name, errString(rc))
		return g.err
	}
	deadline := time.Now().Add(g.timeout)
	wait := time.Microsecond
	for {
		var flag C.int
		if rc := C.testDone(&req, &flag); rc != C.MPI_SUCCESS {
			g.err = fmt.Errorf("%w: rank %d: %s: %s", ErrBroken, g.rank, name, errString(rc))
			return g.err
		}
		if flag != 0 {
			return nil
		}
		if time.Now().After(deadline) {
			// The request cannot be cancelled: the group is broken and
			// its staging memory stays with MPI.
			g.buf, g.cap = nil, 0
			g.err = fmt.Errorf("%w: rank %d waited %v in %s", ErrTimeout, g.rank, g.timeout, name)
			return g.err
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Millisecond)
	}
}

func (g *mpiGroup) AllReduceSum(x []float32) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.staging(len(x))
	copy(s, x)
	err := g.run("MPI_Iallreduce", func(req *C.MPI_Request) C.int {
		return C.iallreduce((*C.float)(g.buf), C.int(len(x)), 0, req)
	})
	if err == nil {
		copy(x, s)
	}
	return err
}

func (g *mpiGroup) Broadcast(x []float32, root int) error {
	checkRoot(g, root)
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.staging(len(x))
	copy(s, x)
	err := g.run("MPI_Ibcast", func(req *C.MPI_Request) C.int {
		return C.ibcast((*C.float)(g.buf), C.int(len(x)), C.int(root), req)
	})
	if err == nil {
		copy(x, s)
	}
	return err
}

func (g *mpiGroup) Max(v float32) (float32, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.staging(1)
	s[0] = v
	err := g.run("MPI_Iallreduce (max)", func(req *C.MPI_Request) C.int {
		return C.iallreduce((*C.float)(g.buf), 1, 1, req)
	})
	return s[0], err
}

func (g *mpiGroup) Barrier() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.run("MPI_Ibarrier", func(req *C.MPI_Request) C.int {
		return C.ibarrier(req)
	})
}

// Close finalizes MPI. On a broken group it returns without finalizing,
// which would wait for the dead peer: the process should exit, and mpirun
// then ends the job.
func (g *mpiGroup) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	mpiOnce.Lock()
	defer mpiOnce.Unlock()
	if mpiOnce.finalized {
		return nil
	}
	mpiOnce.finalized = true
	if g.err != nil {
		return nil
	}
	C.free(g.buf)
	g.buf, g.cap = nil, 0
	if rc := C.MPI_Finalize(); rc != C.MPI_SUCCESS {
		return fmt.Errorf("dist: MPI_Finalize: %s", errString(rc))
	}
	return nil
}
