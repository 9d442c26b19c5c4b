package dist_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// The MNIST MLP's run: a global batch of 64 digits a step.
const (
	globalBatch = 64
	hidden      = 64
)

// plant puts +inf into one element of a gradient.
type plant struct {
	rank, step  int
	afterReduce bool // after the all-reduce, so only the combined inf check can make the others skip
}

// run is one rank's result: its weights after training, and which steps
// it skipped.
type run struct {
	weights [][]float32
	skipped []bool
	losses  []float32
}

func loadMNIST(t testing.TB) *mnist.Set {
	t.Helper()
	train, _, err := mnist.Load("../testdata/mnist")
	if err != nil {
		t.Fatal(err)
	}
	return train
}

// train runs steps of fp16 AMP training of the MLP on rank g.Rank()'s
// shard of each global batch, through a DataParallel over g. Ranks other
// than 0 start from other weights: the broadcast must replace them.
func train(d *vk.Device, g dist.Group, set *mnist.Set, steps int, plants []plant) (r run, err error) {
	rng := rand.New(rand.NewPCG(1+uint64(g.Rank()), 2))
	model := nn.Sequential{nn.NewLinear(d, "fc1", 784, hidden, rng), nn.ReLU{}, nn.NewLinear(d, "fc2", hidden, 10, rng)}
	defer nn.Close(model)
	params := model.Parameters()
	opt, err := newOpt(params)
	if err != nil {
		return r, err
	}
	defer opt.Close()
	sc, err := scaler.New(scaler.Options{InitScale: 1024})
	if err != nil {
		return r, err
	}
	dp, err := dist.NewDataParallel(g, params, dist.DataParallelOptions{BucketBytes: 64 << 10})
	if err != nil {
		return r, err
	}
	lo, hi := dist.Shard(globalBatch, g.Rank(), g.Size())
	n := hi - lo
	x := make([]float32, n*784)
	y := make([]int32, n)
	for step := range steps {
		first := (step*globalBatch + lo) % (set.N - globalBatch)
		copy(x, set.Images[first*784:(first+n)*784])
		for i := range y {
			y[i] = int32(set.Labels[first+i])
		}
		loss, skipped, err := trainStep(d, model, opt, sc, dp, x, y, func(after bool) {
			for _, p := range plants {
				if p.rank == g.Rank() && p.step == step && p.afterReduce == after {
					err = plantInf(params[0].Grad)
				}
			}
		})
		if err != nil {
			return r, fmt.Errorf("rank %d step %d: %w", g.Rank(), step, err)
		}
		r.skipped = append(r.skipped, skipped)
		r.losses = append(r.losses, loss)
	}
	for _, p := range params {
		v, err := p.Value.Float32s()
		if err != nil {
			return r, err
		}
		r.weights = append(r.weights, v)
	}
	return r, nil
}

// autocast is whether the runs train in fp16 AMP.
var autocast = true

// overlap is whether the runs reduce their buckets during backward
// (nn.Options.GradReady) rather than after it.
var overlap = false

// readyAtBackward is, for each overlapped step of each rank, how many
// buckets had started when backward returned, and how many there are.
var (
	readyMu         sync.Mutex
	readyAtBackward [][2]int
)

// newOpt is the runs' optimizer.
var newOpt = func(params []*nn.Param) (optimizer, error) { return nn.NewAdam(params, nn.AdamOptions{LR: 1e-3}) }

type optimizer interface {
	scaler.DeviceSkipper
	ZeroGrad() error
	Close() error
}

func trainStep(d *vk.Device, model nn.Sequential, opt optimizer, sc *scaler.Scaler, dp *dist.DataParallel,
	x []float32, y []int32, hook func(afterReduce bool)) (float32, bool, error) {
	var scope tensor.Scope
	defer scope.Release()
	xb := scope.Track(tensor.FromFloat32(d, x, len(y), 784))
	yb := scope.Track(tensor.FromInt32(d, y, len(y)))
	o := nn.Options{Autocast: nn.AutocastTo(autocast, tensor.Float16)}
	if overlap {
		o.GradReady = dp.GradReady
	}
	gr := nn.NewGraph(d, o)
	defer gr.Release()
	loss := gr.CrossEntropyLoss(model.Forward(gr, gr.Input(xb)), yb, nn.Mean)
	if err := opt.ZeroGrad(); err != nil {
		return 0, false, err
	}
	if err := sc.ScaleLoss(loss).Backward(); err != nil {
		return 0, false, err
	}
	if overlap {
		ready, all := dist.ReadyBuckets(dp)
		readyMu.Lock()
		readyAtBackward = append(readyAtBackward, [2]int{ready, all})
		readyMu.Unlock()
	}
	hook(false)
	if err := dp.AllReduceGrads(); err != nil {
		return 0, false, err
	}
	hook(true)
	if err := dp.Unscale(sc, opt); err != nil {
		return 0, false, err
	}
	skipped, err := sc.Step(opt)
	if err != nil {
		return 0, false, err
	}
	if err := sc.Update(); err != nil {
		return 0, false, err
	}
	s, err := skipped.Value()
	if err != nil {
		return 0, false, err
	}
	l, err := loss.Item()
	return float32(l), s, err
}

func plantInf(g *tensor.Tensor) error {
	raw, err := g.Bytes()
	if err != nil {
		return err
	}
	copy(raw[4*100:], []byte{0x00, 0x00, 0x80, 0x7F}) // +inf, little-endian
	return g.SetBytes(raw)
}

// openDevices opens n devices for a local group: those DIST_DEVICES names
// (comma-separated device indices or name parts, as VKAMP_DEVICE takes),
// else the test device n times.
func openDevices(t testing.TB, n int) []*vk.Device {
	names := strings.Split(os.Getenv("DIST_DEVICES"), ",")
	ds := make([]*vk.Device, n)
	for i := range ds {
		ds[i] = devtest.Open(t, vk.Options{Device: names[i%len(names)]})
	}
	return ds
}

// trainLocal trains on the ranks of a local group, one goroutine each.
func trainLocal(t *testing.T, ds []*vk.Device, set *mnist.Set, steps int, plants []plant) []run {
	gs := dist.NewLocal(len(ds), dist.Options{})
	runs := make([]run, len(ds))
	errs := make([]error, len(ds))
	var wg sync.WaitGroup
	for i := range ds {
		wg.Go(func() {
			runs[i], errs[i] = train(ds[i], gs[i], set, steps, plants)
			if errs[i] != nil {
				gs[i].Close() // the others fail rather than wait
			}
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", i, err)
		}
	}
	return runs
}

// maxDiff is the largest absolute difference of two runs' weights.
func maxDiff(a, b [][]float32) float64 {
	m := 0.0
	for i := range a {
		for j := range a[i] {
			m = max(m, math.Abs(float64(a[i][j])-float64(b[i][j])))
		}
	}
	return m
}
