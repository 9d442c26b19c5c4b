// Package dist trains one model on several devices: data parallelism in the
// manner of PyTorch's DistributedDataParallel, over a process group.
//
// A Group is the set of ranks that train together. Three kinds share the
// interface, so one training loop runs on any of them:
//   - Single: one rank, every collective a no-op (one device).
//   - NewLocal: n ranks in one process, one goroutine per device, reduced on
//     the host in rank order (several devices of one host).
//   - NewMPI: one rank per process under mpirun, through Open MPI's
//     collectives. It is built only with the mpi build tag (go build -tags
//     mpi, with libopenmpi-dev installed); without it NewMPI returns an error
//     that says so.
//
// Every collective waits at most the group's timeout for the other ranks:
// a dead or stuck peer is an error wrapping ErrTimeout, never a hang. After
// any failed collective the group is broken and every later call fails.
//
// DataParallel gives a model's training loop DDP's semantics: weights
// broadcast from rank 0 at the start, gradients averaged over the ranks
// after backward (in buckets), and the loss scaler's inf check combined
// (their maximum) so that every rank skips the same steps and keeps the
// same scale. Shard splits a global batch by rank; Root runs checkpoint
// writes on rank 0 only.
//
// dist sits beside nn and scaler: it imports tensor, nn and scaler, and
// nothing below it imports dist.
package dist
