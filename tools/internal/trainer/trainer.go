// Package trainer trains an MNIST model with fp16 automatic mixed precision
// or in fp32: the loop of tools/train and of the end-to-end tests, written
// as PyTorch's AMP recipe reads. The models are the MLP (784-hidden-10,
// ReLU, Adam, cross-entropy) and PyTorch's examples/mnist CNN (two
// convolutions, max-pooling, dropout, Adadelta with a per-epoch learning
// rate decay, log-softmax and NLL loss).
package trainer

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"time"

	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Options configure a run. Zero fields take the defaults in brackets.
type Options struct {
	Device *vk.Device
	// Train and Test are the data; under autocast New rounds Train's
	// images to the autocast dtype once (inputDType), so later changes to
	// them are not seen.
	Train, Test *mnist.Set
	Model       string  // "mlp" or "cnn" ["mlp"]
	Hidden      int     // hidden units of the MLP [256]
	Batch       int     // samples per step, over all ranks of Group [64]
	LR          float64 // learning rate [mlp: Adam's 1e-3; cnn: Adadelta's 1.0]
	// Gamma multiplies the learning rate after every epoch, as PyTorch's
	// StepLR(step_size=1, gamma): epoch e runs at LR * Gamma^e [mlp: 1;
	// cnn: 0.7, examples/mnist's].
	Gamma  float64
	FP16   bool   // mixed precision with a loss scaler, else fp32
	BF16   bool   // bf16 mixed precision, without a loss scaler (not with FP16)
	Seed   uint64 // weights, shuffling and dropout
	Scaler scaler.Options
	// LossEvery reads the loss every this many steps for OnStep (each read
	// waits for the device); 0 never reads it mid-epoch.
	LossEvery int
	// OnStep, if set, is called after every step.
	OnStep func(Step)
	// AfterBackward, if set, runs between the backward pass and the
	// optimizer step: tests plant infs in gradients there. With a Group
	// it runs before the gradients are all-reduced, so the buckets are
	// then reduced after backward rather than during it.
	AfterBackward func(step int, params []*nn.Param)
	// Group, if set, trains data-parallel: this trainer is one rank, takes
	// its shard of every batch (Batch must be a multiple of the group's
	// size), and its gradients and skips agree with the other ranks'. Every
	// rank must make the same calls (Epoch, Evaluate, Save through
	// dist.Root).
	Group dist.Group
	// Replay captures a training step's command buffers once and replays
	// them for the following steps (tensor.Replayer), as CUDA graphs do,
	// with the same results. A model's dropout reads each step's seed from
	// the device (nn.Options.DeviceSeed), so the CNN replays too. Steps are
	// recorded instead with a Group of several ranks, with AfterBackward,
	// and once a step's graph draws a dropout seed itself: ReplayStats says
	// which.
	Replay bool
}

// Step describes one training step.
type Step struct {
	Epoch, Index, Steps int     // Index of Steps in the epoch
	Loss                float64 // NaN unless read this step
	Scale               float64 // NaN unless read this step
	Skipped             Skipped
}

// Epoch summarises an epoch.
type Epoch struct {
	Epoch        int
	TrainLoss    float64 // mean over the epoch's steps
	TestAccuracy float64
	Scale        float64
	Skipped      int
	Duration     time.Duration
	Samples      int
}

// Trainer holds the model, optimizer and scaler of a run.
type Trainer struct {
	o      Options
	model  nn.Sequential
	params []*nn.Param // trainable
	state  []*nn.Param // params, then buffers (BatchNorm's running statistics): what a checkpoint holds
	data   dataID      // what it trains on (dataOf)
	opt    optimizer
	sc     *scaler.Scaler
	dp     *dist.DataParallel
	zero   *tensor.Tensor // a flag that is always 0
	epoch  int
	steps  int            // optimizer steps taken, skipped or not
	seeds  *nn.SeedSource // dropout seeds of the run, one per step's graph
	// An interrupted epoch resumes at step pos with the loss sum so far.
	pos        int
	partialSum float32
	// checkpoint, if set, is called after every every-th step.
	every      int
	checkpoint func() error
	io         stepIO // the step's persistent tensors, and its Replayer
}

// New builds the model and optimizer on the device.
func New(o Options) (*Trainer, error) {
	if o.Device == nil || o.Train == nil || o.Test == nil {
		return nil, errors.New("trainer: a device and train and test sets are needed")
	}
	if o.FP16 && o.BF16 {
		return nil, errors.New("trainer: fp16 and bf16 are exclusive")
	}
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if o.Model == "cnn" {
		o.Train, o.Test = normalized(o.Train), normalized(o.Test)
	}
	t := &Trainer{o: o, seeds: nn.NewSeedSource(o.Seed)}
	var err error
	if t.model, t.opt, err = build(o); err != nil {
		return nil, err
	}
	t.params, t.state = t.model.Parameters(), nn.State(t.model)
	if t.dp, err = dist.NewDataParallel(o.Group, t.params, dist.DataParallelOptions{}); err != nil {
		t.Close()
		return nil, err
	}
	t.zero = tensor.Zeros(o.Device, tensor.Float32, 1)
	if err := t.initIO(); err != nil {
		t.Close()
		return nil, err
	}
	so := o.Scaler
	so.Disabled = !o.FP16
	if t.sc, err = scaler.New(so); err != nil {
		t.Close()
		return nil, err
	}
	return t, nil
}

// uploadFP32 makes trainers upload fp32 batches under autocast too, as
// they did before inputDType: the reference of a test.
var uploadFP32 = false

// inputDType is the dtype each batch is uploaded in. Under autocast both
// models' first layer (a Linear, a Conv2d) casts its input to the autocast
// dtype, so the training set is rounded once on the host to the same bits
// (tensor.Encode16) instead of every batch on the device: a kernel fewer
// per step, and half the bytes to gather and upload.
func (t *Trainer) inputDType() tensor.DType {
	if (t.o.FP16 || t.o.BF16) && !uploadFP32 {
		return autocastDType(t.o)
	}
	return tensor.Float32
}

// autocastDType is the run's autocast dtype.
func autocastDType(o Options) tensor.DType {
	switch {
	case o.BF16:
		return tensor.BFloat16
	case o.FP16:
		return tensor.Float16
	}
	return tensor.Float32 // off
}

// Close releases everything on the device.
func (t *Trainer) Close() error {
	t.io.close() // first: its graphs wait for their last replay
	if t.sc != nil {
		t.sc.Close()
	}
	if t.opt != nil {
		t.opt.Close()
	}
	t.zero.Release()
	return nn.Close(t.model)
}

// Params returns the model's parameters.
func (t *Trainer) Params() []*nn.Param { return t.params }

// Scaler returns the loss scaler.
func (t *Trainer) Scaler() *scaler.Scaler { return t.sc }

// EpochsDone returns the number of epochs completed.
func (t *Trainer) EpochsDone() int { return t.epoch }

// Epoch trains one epoch and evaluates on the test set. When ctx is done it
// stops after the current step and returns ctx's error; a later Epoch (or
// a Save and a Load) continues the interrupted epoch where it stopped, so
// the run ends as an uninterrupted one would.
func (t *Trainer) Epoch(ctx context.Context) (Epoch, error) {
	o := t.o
	start := time.Now()
	if err := t.opt.SetLR(t.lr()); err != nil {
		return Epoch{}, err
	}
	setTraining(t.model, true)
	steps := o.Train.N / o.Batch
	order := rand.New(rand.NewPCG(o.Seed, uint64(t.epoch)+2)).Perm(o.Train.N)
	lo, hi := dist.Shard(o.Batch, o.Group.Rank(), o.Group.Size())
	// The running loss sum stays on the device: no wait per step. It is
	// the same tensor every epoch, so that a captured step stays valid.
	sum := t.io.sum
	if err := sum.SetBytes(binary.LittleEndian.AppendUint32(nil, math.Float32bits(t.partialSum))); err != nil {
		return Epoch{}, err
	}
	overflows, err := t.sc.Overflows()
	if err != nil {
		return Epoch{}, err
	}
	first := t.pos
	for i := first; i < steps; i++ {
		if err := ctx.Err(); err != nil {
			t.pos = i
			t.partialSum, _ = sum.Item()
			return Epoch{}, err
		}
		if err := t.io.load(o.Train.Rows*o.Train.Cols, o.Train.Images, o.Train.Labels, order[i*o.Batch+lo:i*o.Batch+hi]); err != nil {
			return Epoch{}, err
		}
		// The loss is read on the steps OnStep reports it for, counted in
		// the epoch (the run's step count differs after a resume).
		read := o.LossEvery > 0 && (i+1)%o.LossEvery == 0
		loss, skipped, err := t.step(read)
		if err != nil {
			return Epoch{}, err
		}
		if o.OnStep != nil {
			s := Step{Epoch: t.epoch, Index: i, Steps: steps, Loss: math.NaN(), Scale: math.NaN(), Skipped: skipped}
			if read {
				s.Loss = float64(loss)
				if s.Scale, err = t.sc.ScaleValue(); err != nil {
					return Epoch{}, err
				}
			}
			o.OnStep(s)
		}
		if t.every > 0 && t.steps%t.every == 0 && i+1 < steps {
			// Save resumes after this step, with the loss sum so far.
			t.pos = i + 1
			if t.partialSum, err = sum.Item(); err != nil {
				return Epoch{}, err
			}
			if err := t.checkpoint(); err != nil {
				return Epoch{}, fmt.Errorf("trainer: checkpoint after step %d: %w", t.steps, err)
			}
		}
	}
	total, err := sum.Item()
	if err != nil {
		return Epoch{}, err
	}
	own := total
	mean := []float32{total} // of this rank's shards: the mean over the ranks is the global batches'
	if err := dist.AllReduceAvg(o.Group, mean); err != nil {
		return Epoch{}, err
	}
	total = mean[0]
	acc, err := t.Evaluate(ctx)
	if err != nil {
		if ctx.Err() != nil { // every step done: a later Epoch only evaluates
			t.pos, t.partialSum = steps, own
		}
		return Epoch{}, err
	}
	scale, err := t.sc.ScaleValue()
	if err != nil {
		return Epoch{}, err
	}
	after, err := t.sc.Overflows()
	if err != nil {
		return Epoch{}, err
	}
	e := Epoch{Epoch: t.epoch, TrainLoss: float64(total) / float64(steps), TestAccuracy: acc, Scale: scale,
		Skipped: after - overflows, Duration: time.Since(start), Samples: (steps - first) * o.Batch}
	t.epoch++
	t.pos, t.partialSum = 0, 0
	return e, nil
}

// MNIST's pixel mean and standard deviation, which examples/mnist subtracts
// and divides by (transforms.Normalize((0.1307,), (0.3081,))).
const mnistMean, mnistStd = 0.1307, 0.3081

// normalized is a copy of s with its pixels normalized as examples/mnist's
// are, for the CNN. The MLP keeps [0, 1] pixels, which its figures and
// pinned hashes were measured with.
func normalized(s *mnist.Set) *mnist.Set {
	c := *s
	c.Images = make([]float32, len(s.Images))
	for i, p := range s.Images {
		c.Images[i] = (p - mnistMean) / mnistStd
	}
	return &c
}

// step runs one AMP (or fp32) training step on the batch loaded into the
// input tensors, replayed where it can be, and adds the loss into the
// running sum on the device. It reads nothing back unless read is set; the
// returned loss is valid only then.
func (t *Trainer) step(read bool) (float32, Skipped, error) {
	if err := t.run(t.record); err != nil {
		return 0, Skipped{}, err
	}
	skipped := Skipped{t: t, step: t.steps}
	if t.o.FP16 {
		// The flag of each of the last 8 steps, for Skipped.Value.
		skipped.flag = t.io.skips[t.steps%len(t.io.skips)]
		if err := skipped.flag.CopyFrom(t.io.found); err != nil {
			return 0, skipped, err
		}
	}
	t.steps++
	if !read {
		return 0, skipped, nil
	}
	v, err := t.io.last.Item()
	return v, skipped, err
}

// record records the step: what a captured graph replays. Every tensor it
// reads or writes outside its own temporaries stays alive between steps,
// and it reads nothing on the host.
func (t *Trainer) record() error {
	o := t.o
	d := o.Device
	xb, release := t.io.batch()
	if release {
		defer xb.Release()
	}
	yb := t.io.y
	opts := nn.Options{Autocast: autocastDType(o), Seeds: t.seeds, DeviceSeed: t.io.seed}
	if o.AfterBackward == nil && t.dp.Group().Size() > 1 {
		opts.GradReady = t.dp.GradReady // buckets all-reduced during backward
	}
	g := nn.NewGraph(d, opts)
	defer g.Release()
	loss := t.loss(g, t.model.Forward(g, g.Input(xb)), yb)
	if err := t.opt.ZeroGrad(); err != nil {
		return err
	}
	if err := g.Backward(loss, t.sc.Seed(loss.Value())); err != nil {
		return err
	}
	if o.AfterBackward != nil {
		o.AfterBackward(t.steps, t.params)
	}
	if err := t.dp.AllReduceGrads(); err != nil {
		return err
	}
	if t.dp.Group().Size() > 1 { // else Step checks, and a fused Adam unscales
		if err := t.dp.Unscale(t.sc, t.opt); err != nil {
			return err
		}
	}
	skipped, err := t.sc.Step(t.opt)
	if err != nil {
		return err
	}
	if err := t.sc.Update(); err != nil {
		return err
	}
	if err := tensor.AxpyUnless(1, loss.Value(), t.io.sum, t.zero); err != nil {
		return err
	}
	// The loss and the skip flag go into tensors of the trainer's, which a
	// replay writes again.
	if err := t.io.last.CopyFrom(loss.Value()); err != nil {
		return err
	}
	if f := skipped.Flag(); f != nil {
		return t.io.found.CopyFrom(f)
	}
	return nil
}

// Evaluate returns the accuracy on the test set, in batches, with no graph
// recorded for backward. When ctx is done it stops between batches and
// returns ctx's error (in a single-process run: ranks of a data-parallel
// one evaluate on, and stop together between steps).
func (t *Trainer) Evaluate(ctx context.Context) (float64, error) {
	o := t.o
	d := o.Device
	const batch = 500
	px := o.Test.Rows * o.Test.Cols
	correct := 0
	setTraining(t.model, false)
	defer setTraining(t.model, true)
	for lo := 0; lo < o.Test.N; lo += batch {
		if err := ctx.Err(); err != nil && o.Group.Size() == 1 {
			return 0, err
		}
		n := min(batch, o.Test.N-lo)
		xb := tensor.FromFloat32(d, o.Test.Images[lo*px:(lo+n)*px], t.inputShape(n)...)
		g := nn.NewGraph(d, nn.Options{Autocast: autocastDType(o), NoGrad: true})
		logits, err := t.model.Forward(g, g.Input(xb)).Value().Float32s()
		g.Release()
		xb.Release()
		if err != nil {
			return 0, err
		}
		for i := range n {
			row := logits[i*10 : (i+1)*10]
			best := 0
			for c, v := range row {
				if v > row[best] {
					best = c
				}
			}
			if best == int(o.Test.Labels[lo+i]) {
				correct++
			}
		}
	}
	return float64(correct) / float64(o.Test.N), nil
}

// Save writes a checkpoint of the model, optimizer, scaler and progress,
// with extra JSON sections of the caller's (nil for none).
func (t *Trainer) Save(dir string, extra map[string]json.RawMessage) error {
	sd, err := t.sc.StateDict()
	if err != nil {
		return err
	}
	data := t.dataOf()
	prog, _ := json.Marshal(progress{Epoch: t.epoch, Steps: t.steps, Pos: t.pos, PartialSum: t.partialSum, FP16: t.o.FP16,
		BF16: t.o.BF16, DropoutStep: t.seeds.Step(), Model: t.o.Model, Data: &data})
	sections := map[string]json.RawMessage{"scaler": sd, "progress": prog}
	for k, v := range extra {
		sections[k] = v
	}
	return nn.SaveCheckpoint(dir, t.state, sections, t.opt)
}

// Load restores a checkpoint written by Save and returns its sections.
func (t *Trainer) Load(dir string) (map[string]json.RawMessage, error) {
	// A checkpoint of the other model fails here: its tensors' names differ.
	extra, err := nn.LoadCheckpoint(dir, t.state, t.opt)
	if err != nil {
		return nil, fmt.Errorf("trainer: resume the %s model: %w", t.o.Model, err)
	}
	var p progress
	if err := json.Unmarshal(extra["progress"], &p); err != nil {
		return nil, fmt.Errorf("trainer: checkpoint progress: %w", err)
	}
	if p.model() != t.o.Model {
		return nil, fmt.Errorf("trainer: checkpoint of the %s model, resumed as %s", p.model(), t.o.Model)
	}
	if p.FP16 != t.o.FP16 || p.BF16 != t.o.BF16 {
		return nil, fmt.Errorf("trainer: checkpoint of an fp16=%v bf16=%v run, resumed with fp16=%v bf16=%v", p.FP16, p.BF16, t.o.FP16, t.o.BF16)
	}
	if p.Data != nil { // checkpoints before it have none
		if why := p.Data.differs(t.dataOf()); why != "" {
			return nil, fmt.Errorf("trainer: checkpoint of another run's data: %s", why)
		}
	}
	// Pos may be the epoch's step count: its steps done, its evaluation not.
	if p.Pos < 0 || p.Pos > t.o.Train.N/t.o.Batch || p.Epoch < 0 || p.Steps < 0 {
		return nil, fmt.Errorf("trainer: checkpoint progress out of range: %+v", p)
	}
	if t.o.FP16 {
		if err := t.sc.LoadStateDict(extra["scaler"]); err != nil {
			return nil, err
		}
	}
	t.epoch, t.steps, t.pos, t.partialSum = p.Epoch, p.Steps, p.Pos, p.PartialSum
	t.seeds.SetStep(p.DropoutStep)
	return extra, nil
}

type progress struct {
	Epoch      int     `json:"epoch"`
	Steps      int     `json:"steps"`
	Pos        int     `json:"step_in_epoch"`
	PartialSum float32 `json:"partial_loss_sum"`
	FP16       bool    `json:"fp16"`
	BF16       bool    `json:"bf16,omitempty"`
	// DropoutStep is the step of the run's dropout seeds, so that a resumed
	// run draws the masks the uninterrupted one would have.
	DropoutStep uint64 `json:"dropout_step"`
	Model       string `json:"model,omitempty"` // "" before the CNN: the MLP
	// Data is what the run trains on; nil in checkpoints before it.
	Data *dataID `json:"data,omitempty"`
}

func (p progress) model() string {
	if p.Model == "" {
		return "mlp"
	}
	return p.Model
}

// SetCheckpointEvery makes Epoch call save after every n-th step of the
// run (StepsDone a multiple of n), with the progress set so that a Save
// made by save resumes after that step, mid-epoch; n 0 turns it off. The
// last step of an epoch is left out: Epoch returns just after it, and a
// save then is the caller's. An error from save stops Epoch, which returns
// it.
func (t *Trainer) SetCheckpointEvery(n int, save func() error) {
	t.every, t.checkpoint = n, save
}

// SetOnStep replaces the per-step callback.
func (t *Trainer) SetOnStep(f func(Step)) { t.o.OnStep = f }

// StepsDone returns the steps taken over the whole run.
func (t *Trainer) StepsDone() int { return t.steps }

// StepInEpoch returns the step at which the current epoch resumes.
func (t *Trainer) StepInEpoch() int { return t.pos }

// dataID says what a run trains on, so that a resume on other data (another
// set of the same size, another batch) is an error, not a run that goes on
// with its epoch position meaning something else.
type dataID struct {
	Samples int    `json:"samples"`
	Rows    int    `json:"rows"`
	Cols    int    `json:"cols"`
	Classes int    `json:"classes"` // the largest label + 1
	Batch   int    `json:"batch"`
	Sum     string `json:"sum"` // FNV-1a 64 of the labels and the images' float32 bits
}

// dataOf is the run's dataID, computed once.
func (t *Trainer) dataOf() dataID {
	if t.data.Sum != "" {
		return t.data
	}
	tr := t.o.Train
	h := fnv.New64a()
	h.Write(tr.Labels)
	b := make([]byte, 0, 4096)
	for i, v := range tr.Images {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		if len(b) == cap(b) || i == len(tr.Images)-1 {
			h.Write(b)
			b = b[:0]
		}
	}
	classes := 0
	for _, l := range tr.Labels {
		classes = max(classes, int(l)+1)
	}
	t.data = dataID{Samples: tr.N, Rows: tr.Rows, Cols: tr.Cols, Classes: classes, Batch: t.o.Batch, Sum: fmt.Sprintf("%016x", h.Sum64())}
	return t.data
}

// differs names the first way d differs from the run's e, or "".
func (d dataID) differs(e dataID) string {
	switch {
	case d.Samples != e.Samples:
		return fmt.Sprintf("%d training samples in the checkpoint, %d now", d.Samples, e.Samples)
	case d.Rows != e.Rows || d.Cols != e.Cols:
		return fmt.Sprintf("%dx%d inputs in the checkpoint, %dx%d now", d.Rows, d.Cols, e.Rows, e.Cols)
	case d.Classes != e.Classes:
		return fmt.Sprintf("%d classes in the checkpoint, %d now", d.Classes, e.Classes)
	case d.Batch != e.Batch:
		return fmt.Sprintf("batch %d in the checkpoint, %d now", d.Batch, e.Batch)
	case d.Sum != e.Sum:
		return fmt.Sprintf("the training set's checksum was %s, it is %s now (other samples or labels)", d.Sum, e.Sum)
	}
	return ""
}
