package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/vkamp/vkamp/tools/internal/corpus"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/nn/gpt"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/tools/internal/jsonnum"
	"github.com/vkamp/vkamp/tools/internal/profile"
	"github.com/vkamp/vkamp/tools/internal/progress"
	"github.com/vkamp/vkamp/tools/internal/ranks"
	"github.com/vkamp/vkamp/tools/internal/report"
	"github.com/vkamp/vkamp/vk"
)

// trainer holds a run: the model, its optimizer and scaler, the batch
// sampler and the history.
type trainer struct {
	c      config
	d      *vk.Device
	g      dist.Group // the data-parallel ranks; this one takes rows [lo, hi) of every batch
	dp     *dist.DataParallel
	lo, hi int
	data   *corpus.Corpus
	m      *gpt.Model
	params []*nn.Param
	opt    *nn.Adam
	sc     *scaler.Scaler
	pcg    *rand.PCG // batches: its state goes into the checkpoint
	rng    *rand.Rand
	seeds  *nn.SeedSource // dropout
	lr     func(iter int) float64
	zero   *tensor.Tensor // a flag that is always 0
	io     *stepIO        // the step's persistent tensors and its Replayer
	clip   nn.NormClipper // its tables kept: a captured step clips too
	hist   report.Curve
	x, y   []int32

	iter      int  // the next iteration to run
	evaluated bool // the evaluation at iter is done (a resumed run does not repeat it)
	pending   []pending
	inRow     int // iterations skipped in a row, up to the last read
}

// pending is an iteration whose loss, scale and skip are read a few
// iterations later, when the device has finished it: reading at once
// would make the host wait for every step.
type pending struct {
	iter               int
	loss, scale, found *tensor.Tensor // copies the trainer owns; scale and found nil without a scaler
}

// readLag is how many iterations a loss is read after its own.
const readLag = 3

// collapseAfter is how many iterations skipped in a row stop a run: the
// loss scale has halved that many times (see tools/train).
const collapseAfter = 50

var errCollapsed = errors.New("the loss scale has collapsed")

// progressState is the checkpoint's "progress" section.
type progressState struct {
	Iter        int    `json:"iter"`      // the next iteration to run
	Evaluated   bool   `json:"evaluated"` // its evaluation is done
	RNG         []byte `json:"batch_rng"` // the batch sampler's PCG state
	DropoutStep uint64 `json:"dropout_step"`
	FP16        bool   `json:"fp16"`
	Precision   string `json:"precision,omitempty"` // f16, bf16 or f32; empty in checkpoints that only say fp16
	Model       string `json:"model"`               // the sizes, to refuse another recipe's checkpoint
	// Vocab is the vocabulary, its characters in id order: a checkpoint
	// resumed on a text of other characters would read every id as another
	// character (empty in checkpoints of before, which are not checked).
	Vocab string `json:"vocab,omitempty"`
}

// precision is the run's -precision flag.
func (p progressState) precision() string {
	switch {
	case p.Precision != "":
		return p.Precision
	case p.FP16:
		return "f16"
	}
	return "f32"
}

// evaluation is one JSON line of -json.
type evaluation struct {
	Iter      int           `json:"iter"`
	TrainLoss jsonnum.Float `json:"train_loss"`
	ValLoss   jsonnum.Float `json:"val_loss"`
	TokensPS  float64       `json:"tokens_per_s"`
	Scale     float64       `json:"scale"` // 1 in fp32, as a disabled GradScaler's get_scale
	MSPerIter float64       `json:"ms_per_iter"`
	LR        float64       `json:"lr"`
	Skipped   int           `json:"skipped"` // iterations skipped so far
	// The standard errors of the losses, with -eval-only (0: not measured).
	TrainSE jsonnum.Float `json:"train_loss_se,omitempty"`
	ValSE   jsonnum.Float `json:"val_loss_se,omitempty"`
}

func (c config) modelName() string {
	return fmt.Sprintf("%d layers, %d heads, %d dims, context %d, batch %d", c.layers, c.heads, c.dim, c.block, c.batch)
}

// openRanks opens this process's ranks. The MPI test replaces it: MPI
// can be initialised once a process, and the test trains more than once.
var openRanks = ranks.Open

// run trains as c says: JSON lines (with -json) to out, the rest to log,
// the progress bar to bars.
func run(ctx context.Context, c config, out, log, bars io.Writer) error {
	if err := c.check(); err != nil {
		return err
	}
	data, err := corpus.Load(ctx, c.data)
	if err != nil {
		return err
	}
	if err := data.Check(c.block); err != nil {
		return err
	}
	if c.sample > 0 {
		if r, ok := data.Known(c.prompt); !ok {
			return fmt.Errorf("-prompt: character %q is not in the vocabulary of %s", r, c.data)
		}
	}
	rs, err := openRanks(c.device, c.devices, vk.Options{Timestamps: c.profile}, dist.Options{Timeout: c.timeout})
	if err != nil {
		return err
	}
	defer ranks.Close(rs)
	if rs[0].G.Rank() != 0 { // under mpirun: rank 0 speaks
		out, log, bars = io.Discard, io.Discard, io.Discard
		c.reportPath, c.sample, c.export = "", 0, ""
	}
	for _, r := range rs {
		info := r.D.Info()
		fmt.Fprintf(log, "rank %d of %d: device %d: %s (%s, %s %s), tier %s\n", r.G.Rank(), r.G.Size(), info.Index, info.Name, info.Type, info.DriverName, info.DriverInfo, r.D.Tier())
	}
	fmt.Fprintf(log, "data: %s: vocabulary %d, %d training and %d validation characters\n", c.data, len(data.Chars), len(data.Train), len(data.Val))
	ts := make([]*trainer, len(rs))
	defer func() {
		for _, t := range ts {
			if t != nil {
				t.close()
			}
		}
	}()
	err = ranks.Run(rs, func(i int, r ranks.Rank) (err error) { // together: rank 0 broadcasts its weights
		ts[i], err = newTrainer(c, r.D, r.G, data)
		return err
	})
	if err != nil {
		return err
	}
	t := ts[0]
	fmt.Fprintf(log, "model: %s, %s; number of parameters: %.2fM\n", c.modelName(), precisionName(c.precision), float64(t.m.NumParams(true))/1e6)
	if c.resume {
		for _, t := range ts {
			if err := t.load(c.checkpoint); err != nil {
				return err
			}
		}
		fmt.Fprintf(log, "resumed from %s at iteration %d\n", c.checkpoint, t.iter)
	}
	if c.initFrom != "" { // every rank reads the same file
		for _, t := range ts {
			if err := initFrom(c.initFrom, t.params); err != nil {
				return err
			}
		}
		fmt.Fprintf(log, "weights from %s (nanoGPT's names)\n", c.initFrom)
	}
	if c.evalOnly { // nanoGPT's eval_only: rank 0 evaluates, nothing trains or is written
		e, err := t.evaluate(ctx, true)
		if err != nil {
			return err
		}
		t.report(e, out, log)
		return nil
	}
	start := time.Now()
	err = ranks.Run(rs, func(i int, _ ranks.Rank) error {
		if i == 0 {
			return ts[i].train(ctx, out, log, bars)
		}
		return ts[i].train(ctx, io.Discard, io.Discard, io.Discard)
	})
	if err != nil {
		return err
	}
	wall := time.Since(start)
	fmt.Fprintf(log, "trained %d iterations in %s; %s\n", c.iters, wall.Round(time.Millisecond), t.io.stats())
	if c.profile {
		profile.Print(log, t.d, wall)
	}
	if c.export != "" {
		if err := export(c.export, t.params); err != nil {
			return err
		}
		fmt.Fprintln(log, "weights, as a nanoGPT state dict:", c.export)
	}
	if c.reportPath != "" {
		if err := report.WriteCurves(c.reportPath, t.hist); err != nil {
			return err
		}
		fmt.Fprintln(log, "report:", c.reportPath)
	}
	if c.sample > 0 {
		prompt := data.Encode(c.prompt)
		gen, err := t.m.Generate(prompt, c.sample, gpt.GenerateOptions{Temperature: c.temperature, TopK: c.topK, Autocast: autocastDType(c.precision),
			Context: ctx}, rand.New(rand.NewPCG(c.seed, 2)))
		if err != nil {
			if ctx.Err() != nil { // SIGINT or SIGTERM while sampling: what came so far, then stop
				fmt.Fprintf(log, "sample (interrupted after %d tokens):\n%s%s\n", len(gen), c.prompt, data.Decode(gen))
			}
			return err
		}
		fmt.Fprintf(log, "sample (temperature %g, top-k %d):\n%s%s\n", c.temperature, c.topK, c.prompt, data.Decode(gen))
	}
	return nil
}

func precisionName(precision string) string {
	return map[string]string{"f16": "fp16 AMP", "bf16": "bf16 AMP", "f32": "fp32"}[precision]
}

// autocastDType is the autocast dtype of a precision flag (f32: none).
func autocastDType(precision string) tensor.DType {
	return map[string]tensor.DType{"f16": tensor.Float16, "bf16": tensor.BFloat16}[precision] // f32: Float32, off
}

func newTrainer(c config, d *vk.Device, g dist.Group, data *corpus.Corpus) (*trainer, error) {
	fp16 := c.precision == "f16" // bf16 needs no loss scaler
	if c.batch%g.Size() != 0 {
		return nil, fmt.Errorf("batch %d is not a multiple of the %d ranks", c.batch, g.Size())
	}
	lo, hi := dist.Shard(c.batch, g.Rank(), g.Size())
	t := &trainer{c: c, d: d, g: g, lo: lo, hi: hi, data: data, pcg: rand.NewPCG(c.seed, 1), seeds: nn.NewSeedSource(c.seed),
		hist: report.Curve{Name: precisionName(c.precision)}, x: make([]int32, c.batch*c.block), y: make([]int32, c.batch*c.block)}
	t.rng = rand.New(t.pcg)
	t.m = gpt.New(d, gpt.Config{Vocab: len(data.Chars), BlockSize: c.block, Layers: c.layers, Heads: c.heads, Dim: c.dim, Dropout: c.dropout},
		rand.New(rand.NewPCG(c.seed, 0)))
	t.m.SetTraining(true)
	t.params = t.m.Parameters()
	if err := t.m.Err(); err != nil {
		t.close()
		return nil, err
	}
	var err error
	if t.dp, err = dist.NewDataParallel(g, t.params, dist.DataParallelOptions{}); err != nil {
		t.close()
		return nil, err
	}
	if t.opt, err = newAdamW(t.params, c.recipe); err != nil {
		t.close()
		return nil, err
	}
	t.opt.KeepHalfWeights(c.precision != "f32") // the step writes autocast's weight casts
	if t.sc, err = scaler.New(scaler.Options{Disabled: !fp16}); err != nil {
		t.close()
		return nil, err
	}
	// nanoGPT's lr_decay_iters is max_iters in both recipes: the cosine
	// ends at the last iteration, however many -iters asks for.
	t.lr = nn.CosineWithWarmup(c.lr, c.minLR, min(c.warmup, c.iters), c.iters)
	t.zero = tensor.Zeros(d, tensor.Float32, 1)
	fallback := ""
	switch {
	case !c.replay:
		fallback = "off"
	case g.Size() > 1:
		fallback = "data-parallel: the all-reduce runs on the host"
	case c.profile:
		fallback = "-profile times each kernel, and a captured step takes no timestamps"
	}
	if t.io, err = newStepIO(t, hi-lo, fallback); err != nil {
		t.close()
		return nil, err
	}
	return t, nil
}

func (t *trainer) close() {
	t.dropPending()
	if t.io != nil {
		t.io.close()
	}
	t.clip.Close()
	if t.sc != nil {
		t.sc.Close()
	}
	if t.opt != nil {
		t.opt.Close()
	}
	if t.zero != nil {
		t.zero.Release()
	}
	t.m.Close()
}

func (t *trainer) dropPending() {
	for _, p := range t.pending {
		p.release()
	}
	t.pending = nil
}

// train runs the iterations from t.iter to the last, evaluating every
// evalEvery iterations and after the last.
func (t *trainer) train(ctx context.Context, out, log, bars io.Writer) error {
	c := t.c
	bar := progress.New(bars, progress.Options{Total: c.iters, Done: t.iter, Unit: "iters",
		Description: fmt.Sprintf("%s from iteration %d", t.hist.Name, t.iter)})
	defer bar.Finish()
	tokens := float64(c.batch * c.block)
	start, since := time.Now(), t.iter // of the training time since the last evaluation
	var trainTime time.Duration
	for {
		if t.iter%c.evalEvery == 0 || t.iter == c.iters {
			if !t.evaluated {
				// The device's time too: the host records steps ahead of
				// it, and with frequent evaluations the recording alone
				// read as 0.0 ms an iteration.
				if err := t.drain(); err != nil {
					return err
				}
				trainTime += time.Since(start)
				n := t.iter - since
				e, err := t.evaluate(ctx, false)
				if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
					return t.stop(err, log)
				}
				if err != nil {
					return err
				}
				if n > 0 {
					e.TokensPS = tokens * float64(n) / trainTime.Seconds()
					e.MSPerIter = 1e3 * trainTime.Seconds() / float64(n)
				}
				t.report(e, out, log)
				t.evaluated = true
				if t.iter > 0 { // nanoGPT saves no checkpoint before training
					if err := t.save(); err != nil {
						return err
					}
				}
				start, since, trainTime = time.Now(), t.iter, 0
			}
		}
		if t.iter == c.iters {
			return nil
		}
		err := ctx.Err()
		if err == nil && t.iter == c.stopAt && t.iter > 0 {
			err = context.Canceled
		}
		if err != nil {
			return t.stop(err, log)
		}
		if err := t.step(); err != nil {
			return err
		}
		t.iter++
		t.evaluated = false
		for len(t.pending) > readLag {
			if err := t.readOldest(); err != nil {
				return err
			}
		}
		desc := fmt.Sprintf("iter %d", t.iter)
		if n := len(t.hist.Loss); n > 0 {
			last := t.hist.Iter[n-1]
			desc += fmt.Sprintf("  loss %.4f (iter %d)", t.hist.Loss[n-1], last)
			// The rate of the iterations known finished (their loss was
			// read): the host records a few ahead of the device.
			if done := last + 1 - since; done > 0 {
				desc += fmt.Sprintf("  %.0f tokens/s", tokens*float64(done)/(trainTime+time.Since(start)).Seconds())
			}
		}
		bar.Describe(desc)
		bar.Add(1)
	}
}

// stop ends a run that a signal interrupted (err): the device drained, a
// checkpoint saved where one is asked for, and err returned.
func (t *trainer) stop(err error, log io.Writer) error {
	if derr := t.drain(); derr != nil {
		return derr
	}
	if serr := t.save(); serr != nil {
		return serr
	}
	if t.c.checkpoint != "" {
		fmt.Fprintf(log, "checkpoint written to %s at iteration %d: continue with -resume\n", t.c.checkpoint, t.iter)
	}
	return err
}

// step is one training iteration: the AMP loop of PyTorch, no host wait.
// What changes per step (the learning rate, the batch, the dropout seed)
// is written before it, so that it can be replayed; its loss, scale and
// skip flag are copied for readOldest after it.
func (t *trainer) step() error {
	c := t.c
	if err := t.opt.SetLR(t.lr(t.iter)); err != nil {
		return err
	}
	corpus.Batch(t.data.Train, c.block, t.rng, t.x, t.y) // the whole batch, the same on every rank
	if err := t.io.load(t.x[t.lo*c.block:t.hi*c.block], t.y[t.lo*c.block:t.hi*c.block], t.seeds); err != nil {
		return err
	}
	if err := t.io.run(t.seeds, t.record); err != nil {
		return err
	}
	p := pending{iter: t.iter, loss: tensor.Cast(t.io.loss, tensor.Float32)}
	if t.io.scale != nil {
		p.scale, p.found = tensor.Cast(t.io.scale, tensor.Float32), tensor.Cast(t.io.found, tensor.Float32)
	}
	t.pending = append(t.pending, p)
	return nil
}

// record records the step: what a captured graph replays. It reads the
// batch and the seed from t.io and leaves its loss, scale and skip flag
// there, and reads nothing on the host.
func (t *trainer) record() error {
	d, io := t.d, t.io
	var scope tensor.Scope
	defer scope.Release()
	opts := nn.Options{Autocast: autocastDType(t.c.precision), Seeds: t.seeds, DeviceSeed: io.seed}
	if t.dp.Group().Size() > 1 {
		opts.GradReady = t.dp.GradReady // buckets all-reduced during backward
	}
	g := nn.NewGraph(d, opts)
	defer g.Release()
	loss, _ := t.m.Loss(g, io.x, io.y, t.hi-t.lo)
	if err := t.opt.ZeroGrad(); err != nil {
		return err
	}
	seed := t.sc.Seed(loss.Value()) // the scale, as the backward seed
	if err := io.loss.CopyFrom(scope.Track(tensor.Scale(loss.Value(), 1, tensor.Float32))); err != nil {
		return err
	}
	if io.scale != nil {
		if err := io.scale.CopyFrom(scope.Track(tensor.Scale(seed, 1, tensor.Float32))); err != nil {
			return err
		}
	}
	if err := g.Backward(loss, seed); err != nil {
		return err
	}
	if err := t.dp.AllReduceGrads(); err != nil { // waits for the buckets backward started, when there are several ranks
		return err
	}
	if err := t.dp.Unscale(t.sc, t.opt); err != nil { // and the ranks' inf checks combined
		return err
	}
	norm, err := t.clip.Clip(t.params, t.c.clip)
	if err != nil {
		return err
	}
	norm.Release()
	skipped, err := t.sc.Step(t.opt)
	if err != nil {
		return err
	}
	if f := skipped.Flag(); f != nil && io.found != nil {
		if err := io.found.CopyFrom(f); err != nil {
			return err
		}
	}
	return t.sc.Update()
}

func (p pending) release() {
	for _, x := range []*tensor.Tensor{p.loss, p.scale, p.found} {
		if x != nil {
			x.Release()
		}
	}
}

// readOldest reads the oldest pending iteration into the history.
func (t *trainer) readOldest() error {
	p := t.pending[0]
	t.pending = t.pending[1:]
	defer p.release()
	l, err := p.loss.Item()
	if err != nil {
		return err
	}
	t.hist.Iter = append(t.hist.Iter, p.iter)
	t.hist.Loss = append(t.hist.Loss, float64(l))
	if p.scale == nil {
		return nil
	}
	s, err := p.scale.Item()
	if err != nil {
		return err
	}
	t.hist.ScaleIter = append(t.hist.ScaleIter, p.iter)
	t.hist.Scale = append(t.hist.Scale, float64(s))
	found, err := p.found.Item()
	if err != nil {
		return err
	}
	if found == 0 {
		t.inRow = 0
		return nil
	}
	t.hist.Skipped = append(t.hist.Skipped, p.iter)
	if t.inRow++; t.inRow == collapseAfter {
		return fmt.Errorf("%w: %d iterations in a row were skipped for inf or NaN gradients, the last with scale %g; "+
			"training stopped (skipped steps left the weights as they were) and no checkpoint was written", errCollapsed, t.inRow, s)
	}
	return nil
}

// drain reads every pending iteration.
func (t *trainer) drain() error {
	for len(t.pending) > 0 {
		if err := t.readOldest(); err != nil {
			return err
		}
	}
	return nil
}

// evaluate returns the mean loss over evalIters random batches of each
// split, dropout off, as nanoGPT's estimate_loss. With spread it reads
// every batch's loss (the host waits for each) to give the standard error
// of the means too.
//
// A signal (ctx done) stops it between batches: it then puts the batch
// sampler back where the evaluation began, so that a checkpoint taken now
// resumes with the evaluation the uninterrupted run made, and returns the
// context's error.
func (t *trainer) evaluate(ctx context.Context, spread bool) (evaluation, error) {
	t.m.SetTraining(false)
	defer t.m.SetTraining(true)
	start, err := t.pcg.MarshalBinary()
	if err != nil {
		return evaluation{}, err
	}
	e, err := t.evaluateSplits(ctx, spread)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		if uerr := t.pcg.UnmarshalBinary(start); uerr != nil {
			return e, uerr
		}
	}
	return e, err
}

// evaluateSplits is evaluate's work.
func (t *trainer) evaluateSplits(ctx context.Context, spread bool) (evaluation, error) {
	c := t.c
	e := evaluation{Iter: t.iter, Scale: 1, LR: t.lr(min(t.iter, c.iters-1)), Skipped: len(t.hist.Skipped)}
	for i, split := range [][]int32{t.data.Train, t.data.Val} {
		var mean, se float64
		var err error
		if spread {
			mean, se, err = t.splitLossSpread(ctx, split)
		} else {
			mean, err = t.splitLoss(ctx, split)
		}
		if err != nil {
			return e, err
		}
		if i == 0 {
			e.TrainLoss, e.TrainSE = jsonnum.Float(mean), jsonnum.Float(se)
		} else {
			e.ValLoss, e.ValSE = jsonnum.Float(mean), jsonnum.Float(se)
		}
	}
	if t.sc.Enabled() {
		s, err := t.sc.ScaleValue()
		if err != nil {
			return e, err
		}
		e.Scale = s
	}
	t.hist.EvalIter = append(t.hist.EvalIter, e.Iter)
	t.hist.EvalTrain = append(t.hist.EvalTrain, float64(e.TrainLoss))
	t.hist.EvalVal = append(t.hist.EvalVal, float64(e.ValLoss))
	return e, nil
}

// splitLoss returns the mean loss of evalIters random batches of split,
// summed on the device, the host waiting after every evalWait batches to
// see whether a signal came (ctx's error, returned then).
func (t *trainer) splitLoss(ctx context.Context, split []int32) (float64, error) {
	sum := tensor.Zeros(t.d, tensor.Float32, 1)
	defer sum.Release()
	for k := range t.c.evalIters {
		if k > 0 && k%evalWait == 0 {
			if err := t.d.Wait(); err != nil {
				return 0, err
			}
		}
		if err := t.stopped(ctx, k); err != nil {
			return 0, err
		}
		corpus.Batch(split, t.c.block, t.rng, t.x, t.y)
		if err := t.evalBatch(sum); err != nil {
			return 0, err
		}
	}
	v, err := sum.Item()
	return float64(v) / float64(t.c.evalIters), err
}

// splitLossSpread is splitLoss, the same batches, reading each batch's
// loss to return the standard error of the mean too.
func (t *trainer) splitLossSpread(ctx context.Context, split []int32) (mean, se float64, err error) {
	losses := make([]float64, t.c.evalIters)
	for k := range losses {
		if err := t.stopped(ctx, k); err != nil {
			return 0, 0, err
		}
		corpus.Batch(split, t.c.block, t.rng, t.x, t.y)
		sum := tensor.Zeros(t.d, tensor.Float32, 1)
		berr := t.evalBatch(sum)
		v, ierr := sum.Item()
		sum.Release()
		if err := errors.Join(berr, ierr); err != nil {
			return 0, 0, err
		}
		losses[k] = float64(v)
	}
	mean, se = meanSE(losses)
	return mean, se, nil
}

// evalWait is how many evaluation batches the host records before it
// waits for them and looks for a signal: an evaluation of the GPU recipe's
// 200 batches a split on a software driver takes minutes.
const evalWait = 4

// stopped returns ctx's error, or context.Canceled at batch 1 of the
// evaluation at c.stopEvalAt (tests), when a single-process run is to stop
// inside an evaluation. Ranks of a data-parallel job evaluate on: they stop
// together between steps.
func (t *trainer) stopped(ctx context.Context, batch int) error {
	if t.g != nil && t.g.Size() > 1 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if t.c.stopEvalAt > 0 && t.iter == t.c.stopEvalAt && batch == 1 {
		return context.Canceled
	}
	return nil
}

// meanSE returns the mean of xs and its standard error, the sample
// standard deviation over sqrt(len(xs)) (0 for fewer than 2).
func meanSE(xs []float64) (mean, se float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss / float64(len(xs)-1) / float64(len(xs)))
}

// evalBatch adds the loss of the batch in t.x, t.y into sum on the device.
func (t *trainer) evalBatch(sum *tensor.Tensor) error {
	var scope tensor.Scope
	defer scope.Release()
	xb := scope.Track(tensor.FromInt32(t.d, t.x, len(t.x)))
	yb := scope.Track(tensor.FromInt32(t.d, t.y, len(t.y)))
	g := nn.NewGraph(t.d, nn.Options{Autocast: autocastDType(t.c.precision), NoGrad: true})
	defer g.Release()
	loss, _ := t.m.Loss(g, xb, yb, t.c.batch)
	return tensor.AxpyUnless(1, loss.Value(), sum, t.zero)
}

func (t *trainer) report(e evaluation, out, log io.Writer) {
	if t.c.json {
		b, err := json.Marshal(e)
		if err != nil { // not expected: every float field is finite or a jsonnum.Float
			b = []byte(fmt.Sprintf(`{"iter":%d,"error":%q}`, e.Iter, err.Error()))
		}
		fmt.Fprintf(out, "%s\n", b)
		return
	}
	line := fmt.Sprintf("iter %d: train loss %.4f, val loss %.4f", e.Iter, e.TrainLoss, e.ValLoss)
	if e.ValSE > 0 {
		line = fmt.Sprintf("iter %d: train loss %.4f ± %.4f, val loss %.4f ± %.4f (standard errors over %d batches a split)",
			e.Iter, e.TrainLoss, e.TrainSE, e.ValLoss, e.ValSE, t.c.evalIters)
	}
	if e.TokensPS > 0 {
		line += fmt.Sprintf(", %.1f ms/iter, %.0f tokens/s", e.MSPerIter, e.TokensPS)
	}
	if t.sc.Enabled() {
		line += fmt.Sprintf(", scale 2^%g, %d skipped", math.Log2(e.Scale), e.Skipped)
	}
	fmt.Fprintln(log, line)
}

// save writes a checkpoint of everything a resumed run needs to continue
// bit-exactly; without -checkpoint it does nothing.
func (t *trainer) save() error {
	if t.c.checkpoint == "" {
		return nil
	}
	rng, err := t.pcg.MarshalBinary()
	if err != nil {
		return err
	}
	prog, err := json.Marshal(progressState{Iter: t.iter, Evaluated: t.evaluated, RNG: rng, DropoutStep: t.seeds.Step(),
		FP16: t.sc.Enabled(), Precision: t.c.precision, Model: t.c.modelName(), Vocab: string(t.data.Chars)})
	if err != nil {
		return err
	}
	hist, err := json.Marshal(t.hist)
	if err != nil {
		return err
	}
	sections := map[string]json.RawMessage{"progress": prog, "history": hist}
	if t.sc.Enabled() {
		if sections["scaler"], err = t.sc.StateDict(); err != nil {
			return err
		}
	}
	return dist.Root(t.g, func() error { return nn.SaveCheckpoint(t.c.checkpoint, t.params, sections, t.opt) })
}

// load restores a checkpoint written by save.
func (t *trainer) load(dir string) error {
	extra, err := nn.LoadCheckpoint(dir, t.params, t.opt)
	if err != nil {
		return err
	}
	var p progressState
	if err := json.Unmarshal(extra["progress"], &p); err != nil {
		return fmt.Errorf("checkpoint %s: progress: %w", dir, err)
	}
	switch {
	case p.precision() != t.c.precision:
		return fmt.Errorf("checkpoint %s is of an %s run, resumed in %s", dir, precisionName(p.precision()), precisionName(t.c.precision))
	case p.Model != t.c.modelName():
		return fmt.Errorf("checkpoint %s is of a model of %s, resumed with %s", dir, p.Model, t.c.modelName())
	case p.Iter < 0 || p.Iter > t.c.iters:
		return fmt.Errorf("checkpoint %s is at iteration %d, outside the run's %d", dir, p.Iter, t.c.iters)
	case p.Vocab != "" && p.Vocab != string(t.data.Chars):
		return fmt.Errorf("checkpoint %s was trained on another vocabulary: %s", dir, vocabDiff([]rune(p.Vocab), t.data.Chars))
	}
	if err := t.pcg.UnmarshalBinary(p.RNG); err != nil {
		return fmt.Errorf("checkpoint %s: batch rng: %w", dir, err)
	}
	if err := json.Unmarshal(extra["history"], &t.hist); err != nil {
		return fmt.Errorf("checkpoint %s: history: %w", dir, err)
	}
	if p.FP16 {
		if err := t.sc.LoadStateDict(extra["scaler"]); err != nil {
			return err
		}
	}
	t.iter, t.evaluated = p.Iter, p.Evaluated
	t.seeds.SetStep(p.DropoutStep)
	return nil
}

// vocabDiff names the first difference between a checkpoint's vocabulary
// and the data's.
func vocabDiff(ckpt, data []rune) string {
	for i := range min(len(ckpt), len(data)) {
		if ckpt[i] != data[i] {
			return fmt.Sprintf("id %d is %q in the checkpoint and %q in the data (%d and %d characters)", i, ckpt[i], data[i], len(ckpt), len(data))
		}
	}
	return fmt.Sprintf("%d characters in the checkpoint, %d in the data", len(ckpt), len(data))
}
