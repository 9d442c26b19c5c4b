package dist_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/nn/gpt"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// gptRank is one rank training a GPT on fixed random tokens with SGD in
// fp32: the transformer, whose head is tied to wte (two uses of one
// parameter, the first and the last op of the forward pass).
type gptRank struct {
	d       *vk.Device
	m       *gpt.Model
	opt     *nn.SGD
	dp      *dist.DataParallel
	overlap bool
	rng     *rand.Rand
	lo, hi  int // this rank's rows of the global batch
	x, y    []int32
}

const gptBatch, gptSeq = 4, 16

func newGPTRank(d *vk.Device, g dist.Group, c gpt.Config, bucketBytes int, overlap bool) (*gptRank, error) {
	r := &gptRank{d: d, overlap: overlap, rng: rand.New(rand.NewPCG(7, 8))}
	r.m = gpt.New(d, c, rand.New(rand.NewPCG(1+uint64(g.Rank()), 3))) // the broadcast replaces rank 1's
	if err := r.m.Err(); err != nil {
		return nil, err
	}
	var err error
	if r.opt, err = nn.NewSGD(r.m.Parameters(), nn.SGDOptions{LR: 0.1, Momentum: 0.9}); err != nil {
		return nil, err
	}
	if r.dp, err = dist.NewDataParallel(g, r.m.Parameters(), dist.DataParallelOptions{BucketBytes: bucketBytes}); err != nil {
		return nil, err
	}
	r.lo, r.hi = dist.Shard(gptBatch, g.Rank(), g.Size())
	r.x, r.y = make([]int32, gptBatch*gptSeq), make([]int32, gptBatch*gptSeq)
	return r, nil
}

func (r *gptRank) close() {
	r.opt.Close()
	r.m.Close()
}

// step trains on this rank's rows of the next global batch (the same
// tokens on every rank).
func (r *gptRank) step() error {
	for i := range r.x {
		r.x[i] = int32(r.rng.IntN(r.m.Config.Vocab))
		r.y[i] = (r.x[i]*7 + 3) % int32(r.m.Config.Vocab)
	}
	var scope tensor.Scope
	defer scope.Release()
	x, y := r.x[r.lo*gptSeq:r.hi*gptSeq], r.y[r.lo*gptSeq:r.hi*gptSeq]
	xb := scope.Track(tensor.FromInt32(r.d, x, len(x)))
	yb := scope.Track(tensor.FromInt32(r.d, y, len(y)))
	o := nn.Options{}
	if r.overlap {
		o.GradReady = r.dp.GradReady
	}
	g := nn.NewGraph(r.d, o)
	defer g.Release()
	loss, _ := r.m.Loss(g, xb, yb, r.hi-r.lo)
	if err := r.opt.ZeroGrad(); err != nil {
		return err
	}
	if err := loss.Backward(); err != nil {
		return err
	}
	if err := r.dp.AllReduceGrads(); err != nil {
		return err
	}
	return r.opt.Step()
}

func (r *gptRank) weights() ([][]float32, error) {
	var w [][]float32
	for _, p := range r.m.Parameters() {
		v, err := p.Value.Float32s()
		if err != nil {
			return nil, err
		}
		w = append(w, v)
	}
	return w, nil
}

// gptRanks makes the ranks of a local group over ds.
func gptRanks(t testing.TB, ds []*vk.Device, c gpt.Config, bucketBytes int, overlap bool) []*gptRank {
	gs := dist.NewLocal(len(ds), dist.Options{})
	rs := make([]*gptRank, len(ds))
	err := eachRank(gs, func(i int) (err error) {
		rs[i], err = newGPTRank(ds[i], gs[i], c, bucketBytes, overlap)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, r := range rs {
			r.close()
		}
	})
	return rs
}

// eachRank runs f for every rank at once; a failed rank closes its group
// so that the others fail rather than wait.
func eachRank(gs []dist.Group, f func(i int) error) error {
	errs := make([]error, len(gs))
	var wg sync.WaitGroup
	for i := range gs {
		wg.Go(func() {
			if errs[i] = f(i); errs[i] != nil {
				gs[i].Close()
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("rank %d: %w", i, err)
		}
	}
	return nil
}

func stepAll(rs []*gptRank) error {
	gs := make([]dist.Group, len(rs))
	for i, r := range rs {
		gs[i] = r.dp.Group()
	}
	return eachRank(gs, func(i int) error { return rs[i].step() })
}

var tinyGPT = gpt.Config{Vocab: 32, BlockSize: gptSeq, Layers: 2, Heads: 2, Dim: 32, Bias: true}

// TestOverlapGPT: the transformer, its tied wte and many small buckets (4
// KiB) reduced during backward, trains to the weights of reducing after
// backward, bit for bit, on both ranks.
func TestOverlapGPT(t *testing.T) {
	var runs [2][][][]float32 // after, during: rank, parameter, values
	for k, overlap := range []bool{false, true} {
		rs := gptRanks(t, openDevices(t, 2), tinyGPT, 4<<10, overlap)
		for range 3 {
			if err := stepAll(rs); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range rs {
			w, err := r.weights()
			if err != nil {
				t.Fatal(err)
			}
			runs[k] = append(runs[k], w)
		}
	}
	for i := range 2 {
		if d := maxDiff(runs[1][i], runs[0][i]); d != 0 {
			t.Errorf("rank %d: overlapped weights differ from those reduced after backward by %g", i, d)
		}
	}
	if d := maxDiff(runs[1][0], runs[1][1]); d != 0 {
		t.Errorf("overlapped ranks 0 and 1 differ by %g", d)
	}
}

// BenchmarkOverlap: a step of a small GPT on two ranks of one process
// (NewLocal(2)), its gradients all-reduced after backward and during it,
// the two kinds of step alternating in one run so that the machine's load
// weighs on both alike: ms/step of each, their ratio, and the host's waits
// for the device per step on rank 0 (vk's Stats: Waits, one per bucket at
// most when overlapped, buckets/step of them; Stalls, waits for a free
// command buffer; Submits).
func BenchmarkOverlap(b *testing.B) {
	c := gpt.Config{Vocab: 64, BlockSize: gptSeq, Layers: 4, Heads: 4, Dim: 128, Bias: true}
	const bucketBytes = 256 << 10
	after := gptRanks(b, openDevices(b, 2), c, bucketBytes, false)
	during := gptRanks(b, openDevices(b, 2), c, bucketBytes, true)
	var took [2]time.Duration
	var start [2]vk.Stats
	for k, rs := range [][]*gptRank{after, during} {
		if err := stepAll(rs); err != nil { // warm: pipelines, memory
			b.Fatal(err)
		}
		start[k] = rs[0].d.Stats()
	}
	for b.Loop() {
		for k, rs := range [][]*gptRank{after, during} {
			t0 := time.Now()
			if err := stepAll(rs); err != nil {
				b.Fatal(err)
			}
			took[k] += time.Since(t0)
		}
	}
	for k, rs := range [][]*gptRank{after, during} {
		name := []string{"after", "overlap"}[k]
		b.ReportMetric(float64(took[k].Milliseconds())/float64(b.N), name+"-ms/step")
		st := rs[0].d.Stats()
		b.ReportMetric(float64(st.Waits-start[k].Waits)/float64(b.N), name+"-waits/step")
		b.ReportMetric(float64(st.Stalls-start[k].Stalls)/float64(b.N), name+"-stalls/step")
		b.ReportMetric(float64(st.Submits-start[k].Submits)/float64(b.N), name+"-submits/step")
	}
	b.ReportMetric(float64(took[1])/float64(took[0]), "overlap/after")
	_, buckets := dist.ReadyBuckets(during[0].dp)
	b.ReportMetric(float64(buckets), "buckets/step")
}
