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
// in buckets, and the loss scaler's inf check combined (their maximum) so
// that every rank skips the same steps and keeps the same scale. Shard
// splits a global batch by rank; Root runs checkpoint writes on rank 0
// only.
//
// The buckets' reduction overlaps backward when the step's graph carries
// DataParallel.GradReady as its nn.Options.GradReady hook: backward reports
// each parameter whose gradient is final, and once a bucket's are all
// final (buckets hold the parameters in reverse order, the last layers'
// first) the device is given what was recorded so far, and one goroutine
// per rank waits for it (one host wait per bucket, without holding the
// device's lock, so backward keeps recording), reads the bucket and
// all-reduces it, bucket after bucket in the same order on every rank.
// AllReduceGrads waits for it and writes the means back; it returns the
// first failure of any bucket, and leaves no goroutine behind. The sums
// are the same as after backward, so the results are the same bits.
// Collectives of a rank are only ever called by one goroutine at a time,
// as Group requires (and MPI_THREAD_SERIALIZED allows).
//
// dist sits beside nn and scaler: it imports tensor, nn and scaler, and
// nothing below it imports dist.
package dist
