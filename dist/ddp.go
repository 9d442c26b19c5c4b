package dist

import (
	"fmt"
	"strings"
	"sync"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// DataParallelOptions configure a DataParallel.
type DataParallelOptions struct {
	// BucketBytes caps the gradients reduced in one collective; 0 means
	// 25 MiB, PyTorch's bucket_cap_mb. The first bucket (the last
	// layers') holds at most 1 MiB, as PyTorch's, so that its reduction
	// starts early in backward. A tensor larger than a bucket is a bucket
	// of its own.
	BucketBytes int
}

// DataParallel is DistributedDataParallel's part of a training loop over a
// group, one per rank, each over its own copy of the model. A step is:
//
//	g := nn.NewGraph(d, nn.Options{..., GradReady: dp.GradReady})
//	backward on this rank's shard of the global batch
//	dp.AllReduceGrads()     // gradients averaged over the ranks
//	dp.Unscale(sc, opt)     // sc.Unscale, then the inf check combined over the ranks
//	(clip the gradients)
//	sc.Step(opt); sc.Update()
//
// With the GradReady hook on the step's graph, a bucket's reduction starts
// as soon as backward has recorded its last gradient (buckets hold the
// parameters in reverse order, so the last layers' go first): the device
// runs what was recorded, and a goroutine waits for it, reads the bucket
// and all-reduces it on the host while backward records and the device
// runs the earlier layers. AllReduceGrads waits for the buckets and writes
// the means back. Without the hook AllReduceGrads reduces every bucket
// after backward; the results are the same bits either way. Each rank's
// loss must be the mean over its shard, and the shards of equal size
// (Shard), for the average of the ranks' gradients to be the gradient of
// the mean over the global batch.
//
// Between a step's first GradReady and its AllReduceGrads the gradients
// belong to the reduction: they must not be changed, and the group must
// not be used for another collective.
type DataParallel struct {
	g      Group
	params []*nn.Param
	bucket int        // float32s per bucket
	dev    *vk.Device // the parameters' device, for the buckets' marks
	st     step       // the overlapped reduction (bucket.go)
	host   []float32
	raw    []byte
}

// NewDataParallel broadcasts rank 0's weights of params to every rank and
// returns the DataParallel that keeps them in step. Every rank must pass
// the same parameters, in the same order, with the same shapes.
func NewDataParallel(g Group, params []*nn.Param, o DataParallelOptions) (*DataParallel, error) {
	if o.BucketBytes == 0 {
		o.BucketBytes = 25 << 20
	}
	if o.BucketBytes < 4 {
		return nil, fmt.Errorf("dist: bucket of %d bytes", o.BucketBytes)
	}
	dp := &DataParallel{g: g, params: params, bucket: o.BucketBytes / 4}
	dp.st.idle = sync.NewCond(&dp.st.mu)
	dp.st.of, dp.st.seen = map[*nn.Param]*bucket{}, map[*nn.Param]bool{}
	if len(params) > 0 {
		dp.dev = params[0].Value.Device()
	}
	vals := make([]*tensor.Tensor, len(params))
	for i, p := range params {
		if err := p.Err(); err != nil {
			return nil, err
		}
		vals[i] = p.Value
	}
	if g.Size() == 1 {
		return dp, nil
	}
	if err := agree(g, params); err != nil {
		return nil, err
	}
	if err := dp.each(vals, g.Rank() != 0, func(x []float32) error { return g.Broadcast(x, 0) }); err != nil {
		return nil, fmt.Errorf("dist: broadcast parameters: %w", err)
	}
	return dp, nil
}

// agree checks that every rank of g passes the same parameters in the same
// order: names, shapes and dtypes. Rank 0's list goes to the others (its
// bytes as float32s, which a broadcast carries exactly), each compares, and
// a sum of the mismatches fails every rank, so that none waits in the
// parameters' broadcast for a rank that refused. Shapes alike in another
// order once gave a rank's b rank 0's a.
func agree(g Group, params []*nn.Param) error {
	var desc []string
	for _, p := range params {
		desc = append(desc, fmt.Sprintf("%s %v %s", p.Name, p.Value.Shape(), p.Value.DType()))
	}
	mine := []byte(strings.Join(desc, "\n"))
	n := []float32{float32(len(mine))}
	if err := g.Broadcast(n, 0); err != nil {
		return fmt.Errorf("dist: compare parameters: %w", err)
	}
	root := make([]float32, int(n[0]))
	for i := range root {
		if i < len(mine) {
			root[i] = float32(mine[i])
		}
	}
	if len(root) > 0 {
		if err := g.Broadcast(root, 0); err != nil {
			return fmt.Errorf("dist: compare parameters: %w", err)
		}
	}
	theirs := make([]byte, len(root))
	for i, v := range root {
		theirs[i] = byte(v)
	}
	var why string
	if string(theirs) != string(mine) {
		want := strings.Split(string(theirs), "\n")
		for i := range max(len(want), len(desc)) {
			w, h := "nothing", "nothing"
			if i < len(want) && len(theirs) > 0 {
				w = want[i]
			}
			if i < len(desc) {
				h = desc[i]
			}
			if w != h {
				why = fmt.Sprintf("parameter %d is %q on rank 0 and %q on rank %d", i, w, h, g.Rank())
				break
			}
		}
	}
	bad := []float32{0}
	if why != "" {
		bad[0] = 1
	}
	if err := g.AllReduceSum(bad); err != nil {
		return fmt.Errorf("dist: compare parameters: %w", err)
	}
	switch {
	case why != "":
		return fmt.Errorf("dist: the ranks pass other parameters: %s", why)
	case bad[0] > 0:
		return fmt.Errorf("dist: %g rank(s) pass other parameters than rank 0 (their errors name them)", bad[0])
	}
	return nil
}

// Group returns the group the DataParallel reduces over.
func (dp *DataParallel) Group() Group { return dp.g }

// GradientBytes is how many bytes of fp32 gradients AllReduceGrads reduces
// on each rank (a ring all-reduce sends and receives about twice that,
// times (size-1)/size, per rank).
func (dp *DataParallel) GradientBytes() int {
	n := 0
	for _, p := range dp.params {
		if !p.Frozen && p.Grad != nil {
			n += 4 * p.Grad.Len()
		}
	}
	return n
}

// AllReduceGrads replaces each trainable parameter's gradient with its
// mean over the ranks, in buckets: it waits for the buckets GradReady
// started during backward and reduces the others (all of them without the
// hook), then writes the means back, in order with the recorded work. It
// waits for the device. Its error is the first failure of any bucket
// (reading the device, a collective, a gradient reported twice); no
// goroutine outlives it.
func (dp *DataParallel) AllReduceGrads() error {
	if dp.g.Size() == 1 {
		return nil
	}
	if err := dp.finish(); err != nil {
		return fmt.Errorf("dist: all-reduce gradients: %w", err)
	}
	return nil
}

// Unscale unscales opt's gradients (sc.Unscale) and combines the inf check
// over the ranks: if any rank's gradients held an inf or NaN, every rank's
// Step skips and every rank's Update backs off. Call it after
// AllReduceGrads and before clipping and sc.Step. A disabled scaler does
// nothing; with several ranks it waits for the device (one flag read).
func (dp *DataParallel) Unscale(sc *scaler.Scaler, opt scaler.Optimizer) error {
	if !sc.Enabled() {
		return nil
	}
	if err := sc.Unscale(opt); err != nil {
		return err
	}
	if dp.g.Size() == 1 {
		return nil // no wait for the flag
	}
	return sc.CombineFound(opt, func(found bool) (bool, error) { return MaxFlag(dp.g, found) })
}

// each runs f over ts in buckets: each bucket's tensors read into one host
// slice, then written back from it if write is set. ts are Float32.
func (dp *DataParallel) each(ts []*tensor.Tensor, write bool, f func([]float32) error) error {
	for i := 0; i < len(ts); {
		j, n := i, 0
		for j < len(ts) && (j == i || n+ts[j].Len() <= dp.bucket) {
			if ts[j].DType() != tensor.Float32 {
				panic(&tensor.DTypeError{Op: "dist.DataParallel", Got: ts[j].DType(), Want: "float32 parameters and gradients"})
			}
			n += ts[j].Len()
			j++
		}
		if cap(dp.host) < n {
			dp.host = make([]float32, n)
		}
		x := dp.host[:n]
		off := 0
		for _, t := range ts[i:j] {
			if err := readInto(t, x[off:off+t.Len()]); err != nil {
				return err
			}
			off += t.Len()
		}
		if err := f(x); err != nil {
			return err
		}
		if write {
			off = 0
			for _, t := range ts[i:j] {
				if err := writeFrom(t, x[off:off+t.Len()], &dp.raw); err != nil {
					return err
				}
				off += t.Len()
			}
		}
		i = j
	}
	return nil
}

// Shard returns the part [lo, hi) of n items, a global batch, that rank
// takes of size ranks: contiguous parts whose sizes differ by at most one
// (equal when size divides n, as the mean of the ranks' gradients needs).
func Shard(n, rank, size int) (lo, hi int) {
	if size < 1 || rank < 0 || rank >= size || n < 0 {
		panic(fmt.Sprintf("dist: Shard of %d items for rank %d of %d", n, rank, size))
	}
	return n * rank / size, n * (rank + 1) / size
}
