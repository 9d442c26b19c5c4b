package nn_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/internal/ref"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Gradient checks of batch_norm, nll_loss and log_softmax (the cases of
// grad_test.go's harness, in fp32 and under fp16 autocast), and the
// behaviour of BatchNorm2d, NLLLoss and Adadelta in nn.

func bnGradCases(t *testing.T, d *vk.Device) []gradCase {
	const n, c, s = 3, 2, 4 // x [3, 2, 2, 2]
	nearOne := func(i int, v []float32) []float32 {
		if i == 1 {
			return shifted(v, 1) // gamma near 1
		}
		return v
	}
	rm, rv := []float32{0.25, -0.5}, []float32{0.5, 2}
	run := &tensor.BatchNormRunning{Mean: tInput(t, d, rm, c), Var: tInput(t, d, rv, c), Count: tensor.Zeros(d, tensor.Int32, 1)}
	t.Cleanup(run.Count.Release)
	labelVals := []int32{2, 0, 4, 1}
	labels := tLabels(t, d, labelVals...)
	cases := []gradCase{
		{
			name: "batch_norm training", shapes: [][]int{{n, c, 2, 2}, {c}, {c}}, k: 8 * n * s, prep: nearOne,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var {
				return g.BatchNorm(in[0], in[1], in[2], tensor.BatchNormOpts{Training: true, Eps: 1e-5})
			},
			host: func(in [][]float64) []float64 {
				y, _, _ := ref.BatchNorm64(in[0], in[1], in[2], nil, nil, n, c, s, 1e-5, true)
				return y
			},
		},
		{
			name: "batch_norm eval", shapes: [][]int{{n, c, 2, 2}, {c}, {c}}, k: 8 * n * s, prep: nearOne,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var {
				return g.BatchNorm(in[0], in[1], in[2], tensor.BatchNormOpts{Running: run, Eps: 1e-5})
			},
			host: func(in [][]float64) []float64 {
				y, _, _ := ref.BatchNorm64(in[0], in[1], in[2], to64(rm), to64(rv), n, c, s, 1e-5, false)
				return y
			},
		},
		{
			name: "log_softmax", shapes: [][]int{{4, 5}}, k: 5 + ref.ExpRoundings,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, 2) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.LogSoftmax(in[0], -1) },
			host:  func(in [][]float64) []float64 { return ref.LogSoftmax64(in[0], 5) },
		},
	}
	for _, r := range []nn.Reduction{nn.Mean, nn.Sum} {
		cases = append(cases, gradCase{
			name: fmt.Sprintf("nll_loss reduction=%d", r), shapes: [][]int{{4, 5}}, k: 5,
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.NLLLoss(in[0], labels, r) },
			host:  func(in [][]float64) []float64 { return []float64{ref.NLL64(in[0], labelVals, 5, r == nn.Mean)} },
		}, gradCase{
			// log_softmax then nll_loss is cross-entropy.
			name: fmt.Sprintf("nll_loss of log_softmax reduction=%d", r), shapes: [][]int{{4, 5}}, k: 5 + ref.ExpRoundings,
			prep:  func(_ int, v []float32) []float32 { return scaled(v, 2) },
			build: func(g *nn.Graph, in []*nn.Var) *nn.Var { return g.NLLLoss(g.LogSoftmax(in[0], -1), labels, r) },
			host:  func(in [][]float64) []float64 { return []float64{hostCrossEntropy(in[0], labelVals, 5, r)} },
		})
	}
	return cases
}

func TestGradientsBatchNormNLL(t *testing.T) {
	d := devtest.Open(t)
	for _, c := range bnGradCases(t, d) {
		for _, dt := range []tensor.DType{f32, f16} {
			t.Run(fmt.Sprintf("%s/%s", c.name, dt), func(t *testing.T) { checkGradCase(t, d, c, dt) })
		}
	}
}

// TestBatchNorm2d: the module's defaults and names, its running
// statistics after training steps (PyTorch's update), eval mode, and its
// buffers through a checkpoint.
func TestBatchNorm2d(t *testing.T) {
	d := devtest.Open(t)
	const n, c, h = 4, 3, 2
	bn := nn.NewBatchNorm2d(d, "bn", c)
	t.Cleanup(func() { nn.Close(bn) })
	if !bn.Training || bn.Momentum != 0.1 || bn.Eps != 1e-5 {
		t.Fatalf("defaults: training %v momentum %g eps %g", bn.Training, bn.Momentum, bn.Eps)
	}
	var names []string
	for _, p := range nn.State(bn) {
		names = append(names, p.Name)
	}
	if fmt.Sprint(names) != "[bn.weight bn.bias bn.running_mean bn.running_var bn.num_batches_tracked]" {
		t.Errorf("state names %v", names)
	}
	rm, rv := make([]float64, c), []float64{1, 1, 1}
	gamma, beta := []float64{1, 1, 1}, []float64{0, 0, 0}
	for step := range 2 {
		xv := tRand(n*c*h*h, uint64(40+step), 2, f32)
		g := nn.NewGraph(d, nn.Options{})
		g.Sum(bn.Forward(g, g.Input(tInput(t, d, xv, n, c, h, h))))
		g.Release()
		_, mean, uvar := ref.BatchNorm64(to64(xv), gamma, beta, nil, nil, n, c, h*h, 1e-5, true)
		ref.RunningUpdate64(rm, mean, 0.1)
		ref.RunningUpdate64(rv, uvar, 0.1)
	}
	tol := ref.Tol(f32, 4*n*h*h)
	ref.Check(t, "running mean", tRead(t, bn.RunningMean.Value), rm, tMaxScale(rm), tol)
	ref.Check(t, "running var", tRead(t, bn.RunningVar.Value), rv, tMaxScale(rv), tol)
	if cnt, err := bn.NumBatchesTracked.Value.Int32s(); err != nil || cnt[0] != 2 {
		t.Errorf("num_batches_tracked %v (%v), want 2", cnt, err)
	}

	bn.SetTraining(false)
	xv := tRand(n*c*h*h, 50, 2, f32)
	g := nn.NewGraph(d, nn.Options{NoGrad: true})
	y := tRead(t, bn.Forward(g, g.Input(tInput(t, d, xv, n, c, h, h))).Value())
	g.Release()
	want, _, _ := ref.BatchNorm64(to64(xv), gamma, beta, rm, rv, n, c, h*h, 1e-5, false)
	ref.Check(t, "eval", y, want, tMaxScale(want), tol)
	if cnt, _ := bn.NumBatchesTracked.Value.Int32s(); cnt[0] != 2 {
		t.Errorf("eval changed num_batches_tracked to %d", cnt[0])
	}

	// The buffers go through a checkpoint with the parameters.
	dir := t.TempDir()
	if err := nn.SaveCheckpoint(dir, nn.State(bn), nil); err != nil {
		t.Fatal(err)
	}
	other := nn.NewBatchNorm2d(d, "bn", c)
	t.Cleanup(func() { nn.Close(other) })
	if _, err := nn.LoadCheckpoint(dir, nn.State(other)); err != nil {
		t.Fatal(err)
	}
	for i, p := range nn.State(bn)[:4] {
		tSameBits(t, p.Name, tRead(t, nn.State(other)[i].Value), tRead(t, p.Value))
	}
	if cnt, err := other.NumBatchesTracked.Value.Int32s(); err != nil || cnt[0] != 2 {
		t.Errorf("num_batches_tracked loaded as %v (%v), want 2", cnt, err)
	}
	if bs := nn.Buffers(nn.Sequential{bn, nn.ReLU{}, nn.Sequential{other}}); len(bs) != 6 || bs[3] != other.RunningMean {
		t.Errorf("buffers of nested Sequentials: %d", len(bs))
	}
	// Buffers are not parameters: an optimizer refuses them.
	if _, err := nn.NewAdadelta(nn.State(bn), nn.AdadeltaOptions{}); err == nil {
		t.Error("an optimizer took a buffer")
	}
}

// TestAdadelta: nn.Adadelta's defaults, steps against the float64
// reference, and a step skipped by the gradient scaler.
func TestAdadelta(t *testing.T) {
	d := devtest.Open(t)
	rng := rand.New(rand.NewPCG(3, 4))
	lin := nn.NewLinear(d, "fc", 4, 3, rng)
	t.Cleanup(func() { nn.Close(lin) })
	opt, err := nn.NewAdadelta(lin.Parameters(), nn.AdadeltaOptions{WeightDecay: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opt.Close() })
	if opt.LR() != 1 {
		t.Errorf("default LR %g, want 1", opt.LR())
	}
	sc, err := scaler.New(scaler.Options{InitScale: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sc.Close() })
	ps := lin.Parameters()
	w, sq, acc := make([][]float64, len(ps)), make([][]float64, len(ps)), make([][]float64, len(ps))
	for i, p := range ps {
		w[i] = to64(tRead(t, p.Value))
		sq[i], acc[i] = make([]float64, len(w[i])), make([]float64, len(w[i]))
	}
	x := tInput(t, d, tRand(2*4, 9, 1, f32), 2, 4)
	for step := range 3 {
		lr := 1 * math.Pow(0.7, float64(step)) // examples/mnist's StepLR
		if err := opt.SetLR(lr); err != nil {
			t.Fatal(err)
		}
		opt.ZeroGrad()
		g := nn.NewGraph(d, nn.Options{})
		loss := g.Sum(lin.Forward(g, g.Input(x)))
		if err := g.Backward(loss, sc.Seed(loss.Value())); err != nil {
			t.Fatal(err)
		}
		if step == 1 { // an inf in a gradient: the scaler skips the step on the device
			if err := ps[1].Grad.SetBytes(f32Bytes([]float32{float32(math.Inf(1)), 0, 0})); err != nil {
				t.Fatal(err)
			}
		}
		grads := make([][]float64, len(ps))
		for i, p := range ps {
			grads[i] = to64(tRead(t, p.Grad))
		}
		scale, _ := sc.ScaleValue()
		if _, err := sc.Step(opt); err != nil {
			t.Fatal(err)
		}
		sc.Update()
		g.Release()
		if step == 1 {
			continue
		}
		for i := range ps {
			ref.Adadelta64(w[i], mapf(grads[i], func(v float64) float64 { return v / scale }), sq[i], acc[i], lr, 0.9, 1e-6, 0.01)
		}
	}
	for i, p := range ps {
		ref.Check(t, p.Name, tRead(t, p.Value), w[i], tMaxScale(w[i]), 1e-5)
	}
	if n, err := opt.Steps(); err != nil || n != 2 {
		t.Errorf("steps %d (%v), want 2", n, err)
	}
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func adadeltaMaker(o nn.AdadeltaOptions) func([]*nn.Param) (optimizer, error) {
	return func(ps []*nn.Param) (optimizer, error) { return nn.NewAdadelta(ps, o) }
}
