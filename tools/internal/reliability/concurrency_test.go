package reliability_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/vkamp/vkamp/internal/devtest"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// lossReport is what a training goroutine hands the reader after a step:
// a copy of the loss, which the reader owns, and the step's Skipped.
type lossReport struct {
	model, step int
	loss        *tensor.Tensor
	skipped     scaler.Skipped
	sc          *scaler.Scaler
}

// record is what the reader read for one step.
type record struct {
	loss    float32
	skipped bool
}

// job is one model's training: its own parameters, optimizer, scaler and a
// Graph per step, on inputs uploaded every step.
type job struct {
	model nn.Module
	opt   interface {
		scaler.DeviceSkipper
		ZeroGrad() error
		Close() error
	}
	sc       *scaler.Scaler
	in, out  int
	seed     uint64
	autocast bool
}

// newJobs builds the two models: an MLP with Adam under fp16 autocast, and
// a linear layer with momentum SGD in fp32 (its scaler disabled).
func newJobs(t *testing.T, d *vk.Device) []*job {
	t.Helper()
	rng := rand.New(rand.NewPCG(21, 22))
	mlp := nn.Sequential{nn.NewLinear(d, "a.fc1", 8, 32, rng), nn.ReLU{}, nn.NewLinear(d, "a.fc2", 32, 4, rng)}
	lin := nn.Sequential{nn.NewLinear(d, "b.fc", 6, 3, rng)}
	adam, err := nn.NewAdam(mlp.Parameters(), nn.AdamOptions{LR: 1e-2})
	if err != nil {
		t.Fatal(err)
	}
	sgd, err := nn.NewSGD(lin.Parameters(), nn.SGDOptions{LR: 0.05, Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	// A small growth interval, so that the scale changes during the run.
	sa, err := scaler.New(scaler.Options{InitScale: 1 << 14, GrowthInterval: 7})
	if err != nil {
		t.Fatal(err)
	}
	sb, err := scaler.New(scaler.Options{Disabled: true})
	if err != nil {
		t.Fatal(err)
	}
	jobs := []*job{
		{model: mlp, opt: adam, sc: sa, in: 8, out: 4, seed: 1, autocast: true},
		{model: lin, opt: sgd, sc: sb, in: 6, out: 3, seed: 2},
	}
	t.Cleanup(func() {
		for _, j := range jobs {
			j.sc.Close()
			j.opt.Close()
			nn.Close(j.model)
		}
	})
	return jobs
}

// run trains j for steps steps, handing each step's loss to report.
func (j *job) run(d *vk.Device, id, steps int, report func(lossReport)) error {
	const batch = 32
	rng := rand.New(rand.NewPCG(j.seed, 3))
	for i := range steps {
		x := tensor.FromFloat32(d, random(rng, batch*j.in), batch, j.in)
		y := tensor.FromFloat32(d, random(rng, batch*j.out), batch, j.out)
		g := nn.NewGraph(d, nn.Options{Autocast: nn.AutocastTo(j.autocast, tensor.Float16)})
		loss := g.MSELoss(j.model.Forward(g, g.Input(x)), g.Input(y), nn.Mean)
		err := j.opt.ZeroGrad()
		if err == nil {
			err = g.Backward(loss, j.sc.Seed(loss.Value()))
		}
		var skipped scaler.Skipped
		if err == nil {
			skipped, err = j.sc.Step(j.opt)
		}
		if err == nil {
			err = j.sc.Update()
		}
		if err == nil {
			report(lossReport{model: id, step: i, loss: tensor.Cast(loss.Value(), tensor.Float32), skipped: skipped, sc: j.sc})
		}
		g.Release()
		x.Release()
		y.Release()
		if err != nil {
			return fmt.Errorf("model %d step %d: %w", id, i, err)
		}
	}
	return nil
}

// readReport reads and releases a report's loss, its Skipped and the
// scaler's scale.
func readReport(r lossReport) (record, error) {
	defer r.loss.Release()
	v, err := r.loss.Item()
	if err != nil {
		return record{}, err
	}
	s, err := r.skipped.Value()
	if err != nil {
		return record{}, err
	}
	if _, err := r.sc.ScaleValue(); err != nil {
		return record{}, err
	}
	return record{v, s}, nil
}

// TestConcurrentTraining trains two models on one device from two
// goroutines while a third reads their losses, and checks that the losses,
// the skipped steps and the final weights are bit for bit those of the same
// models trained one after the other. Run it with -race.
func TestConcurrentTraining(t *testing.T) {
	steps := 120
	if testing.Short() {
		steps = 40
	}
	d := devtest.Open(t)

	// One after the other, reading each loss at once.
	seq := newJobs(t, d)
	seqRecords := make([][]record, len(seq))
	for id, j := range seq {
		err := j.run(d, id, steps, func(r lossReport) {
			rec, err := readReport(r)
			if err != nil {
				t.Fatal(err)
			}
			seqRecords[id] = append(seqRecords[id], rec)
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	// At once, with a reader goroutine.
	con := newJobs(t, d)
	conRecords := make([][]record, len(con))
	reports := make(chan lossReport)
	readerDone := make(chan error, 1)
	go func() {
		var first error
		for r := range reports {
			rec, err := readReport(r)
			if err != nil && first == nil {
				first = err
			}
			conRecords[r.model] = append(conRecords[r.model], rec)
		}
		readerDone <- first
	}()
	var wg sync.WaitGroup
	errs := make([]error, len(con))
	for id, j := range con {
		wg.Go(func() { errs[id] = j.run(d, id, steps, func(r lossReport) { reports <- r }) })
	}
	wg.Wait()
	close(reports)
	if err := <-readerDone; err != nil {
		t.Fatalf("reader: %v", err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	skipped := 0
	for id := range seq {
		if len(conRecords[id]) != steps || len(seqRecords[id]) != steps {
			t.Fatalf("model %d: %d losses read concurrently, %d in sequence, want %d", id, len(conRecords[id]), len(seqRecords[id]), steps)
		}
		for i, r := range seqRecords[id] {
			if l := float64(r.loss); math.IsNaN(l) || math.IsInf(l, 0) {
				// NaN equals NaN bit for bit: the comparison would be blind.
				t.Errorf("model %d step %d: loss %g in sequence: the comparison cannot see differences (is MatMul right?)", id, i, r.loss)
				break
			}
		}
		for i := range steps {
			a, b := conRecords[id][i], seqRecords[id][i]
			if math.Float32bits(a.loss) != math.Float32bits(b.loss) || a.skipped != b.skipped {
				t.Fatalf("model %d step %d: concurrent loss %g (skipped %v), in sequence %g (skipped %v)", id, i, a.loss, a.skipped, b.loss, b.skipped)
			}
			if a.skipped {
				skipped++
			}
		}
		sameBits(t, fmt.Sprintf("model %d's final weights", id), readParams(t, con[id].model.Parameters()), readParams(t, seq[id].model.Parameters()))
	}
	scale, err := con[0].sc.ScaleValue()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("2 models x %d steps at once and in sequence: losses %g -> %g and %g -> %g, %d skipped steps, final scale %g; identical",
		steps, seqRecords[0][0].loss, seqRecords[0][steps-1].loss, seqRecords[1][0].loss, seqRecords[1][steps-1].loss, skipped, scale)
}
