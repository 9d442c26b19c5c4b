// Command train trains an MNIST model with fp16 automatic mixed precision
// on the best Vulkan device found (software Vulkan without a GPU), and shows
// how it went: a progress bar per epoch, a summary line per epoch (or, with
// -json, one JSON object per epoch on stdout) and, with -report, a figure.
//
//	go run ./tools/train [-model mlp|cnn] [-epochs 5] [-precision f16|bf16|f32] [-report report.png] [-compare]
//	                     [-checkpoint DIR [-checkpoint-every N] [-resume]] [-json]
//	                     [-train-samples N] [-test-samples N] [-profile]
//
// -model mlp (the default) is the 784-256-10 MLP with Adam; -model cnn is
// PyTorch's examples/mnist network (two convolutions, max-pooling, dropout,
// log-softmax and NLL loss) with Adadelta at lr 1.0 decayed by 0.7 after
// each epoch. The MLP stays the default because it is the demo that runs in
// seconds on a software device; the CNN does about 60 times its arithmetic
// per digit.
//
// With -checkpoint, a checkpoint is written after each epoch and, with
// -checkpoint-every N, after every N-th step as well, so a killed run
// loses at most N steps; -resume continues from the step it was written
// after, inside its epoch.
//
// Ctrl-C finishes the current step, writes a checkpoint if -checkpoint is
// set, and exits; -resume continues from it to the same result as an
// uninterrupted run.
//
// -replay (the default) captures the training step once and replays it
// (tensor.Replayer), with the same results (the CNN's dropout reads each
// step's seed from the device); data-parallel runs record every step. The
// run ends with the counts of steps replayed, captured and recorded.
//
// -profile times every kernel on the device and ends the run with where
// the device time went, kernel by kernel (steps are then recorded, not
// replayed: a captured step takes no timestamps).
//
// bf16 runs autocast in bfloat16 without a loss scaler (bf16 has fp32's
// range), as torch.autocast(dtype=torch.bfloat16) is used.
//
// -devices 0,1 trains data-parallel on several devices in this process,
// one rank each, every batch of -batch digits split among them; under
// mpirun (built with -tags mpi) each process is a rank, on -device or on
// its entry of -devices. Rank 0 prints, reports and writes checkpoints.
// A rank waits at most -collective-timeout for the others in a collective,
// then fails with an error: a peer that died or hangs ends the run, also
// where the launcher does not end it (mpirun --enable-recovery).
//
// With fp16, a step whose gradients hold an inf or NaN is skipped and the
// loss scale halves. When 50 steps in a row are skipped (collapseAfter),
// the scale has collapsed (2^-50 of what it was; below about 2.9e-39 every
// step is skipped and it can never grow back): the run stops with an error
// naming the scale and the count, and writes no checkpoint, so the last one
// written stays good. The weights are never touched by a skipped step.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vkamp/vkamp/checkpoint"
	"github.com/vkamp/vkamp/dist"
	"github.com/vkamp/vkamp/mnist"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tools/internal/jsonnum"
	"github.com/vkamp/vkamp/tools/internal/profile"
	"github.com/vkamp/vkamp/tools/internal/progress"
	"github.com/vkamp/vkamp/tools/internal/ranks"
	"github.com/vkamp/vkamp/tools/internal/report"
	"github.com/vkamp/vkamp/tools/internal/trainer"
	"github.com/vkamp/vkamp/vk"
)

type config struct {
	device, devices, precision, data, checkpoint, reportPath string
	timeout                                                  time.Duration
	epochs, batch, logEvery, checkpointEvery                 int
	lr, initScale                                            float64
	seed                                                     uint64
	resume, compare, replay, profile                         bool
	model                                                    string
	gamma                                                    float64
	json                                                     bool
	trainSamples, testSamples                                int
}

func main() {
	var c config
	flag.StringVar(&c.device, "device", "", "device index or name substring (default: VKAMP_DEVICE, else the best)")
	flag.StringVar(&c.devices, "devices", "", "comma-separated devices to train on data-parallel, one rank each (under mpirun: rank r takes entry r mod their number)")
	flag.StringVar(&c.precision, "precision", "f16", "f16 (mixed precision with loss scaling), bf16 (mixed precision, no scaler) or f32")
	flag.StringVar(&c.data, "data", "testdata/mnist", "directory of MNIST IDX files (plain or .gz)")
	flag.StringVar(&c.checkpoint, "checkpoint", "", "directory to write a checkpoint to after each epoch and on Ctrl-C")
	flag.IntVar(&c.checkpointEvery, "checkpoint-every", 0, "also write the checkpoint after every this many steps (0: only after each epoch)")
	flag.StringVar(&c.reportPath, "report", "", "write a PNG figure of the run here")
	flag.IntVar(&c.epochs, "epochs", 5, "epochs to train")
	flag.IntVar(&c.batch, "batch", 64, "digits per step for the whole job, split among the ranks of a data-parallel run")
	flag.IntVar(&c.logEvery, "log-every", 5, "read the loss and scale every this many steps (each read waits for the device)")
	flag.Float64Var(&c.lr, "lr", 0, "learning rate (0: the model's, Adam's 1e-3 for mlp, Adadelta's 1.0 for cnn)")
	flag.StringVar(&c.model, "model", "mlp", "mlp (784-256-10, Adam) or cnn (PyTorch's examples/mnist network, Adadelta)")
	flag.Float64Var(&c.gamma, "gamma", 0, "learning-rate decay per epoch (0: the model's, 1 for mlp, 0.7 for cnn)")
	flag.BoolVar(&c.json, "json", false, "write one JSON object per epoch to stdout (epoch, train_loss, test_accuracy, samples_per_s, scale) instead of the summary lines")
	flag.Float64Var(&c.initScale, "init-scale", 65536, "initial loss scale of fp16 training (PyTorch's init_scale)")
	flag.Uint64Var(&c.seed, "seed", 1, "seed of weights, shuffling and dropout")
	flag.DurationVar(&c.timeout, "collective-timeout", 0, "how long a rank waits in a collective for the others before it fails (0: 10 minutes)")
	flag.BoolVar(&c.resume, "resume", false, "continue from the checkpoint in -checkpoint")
	flag.IntVar(&c.trainSamples, "train-samples", 0, "train on the first this many training digits only (0: all), for short runs")
	flag.IntVar(&c.testSamples, "test-samples", 0, "test on the first this many test digits only (0: all)")
	flag.BoolVar(&c.compare, "compare", false, "also train in the other precision and compare in the report")
	flag.BoolVar(&c.replay, "replay", true, "capture a training step's command buffers once and replay them for the following steps (same results; data-parallel runs record every step)")
	flag.BoolVar(&c.profile, "profile", false, "time every kernel on the device and print where the training time went (steps are recorded, not replayed)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, c, os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "train: interrupted")
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(1)
	}
}

func (c config) check() error {
	switch {
	case c.precision != "f16" && c.precision != "bf16" && c.precision != "f32":
		return fmt.Errorf("unknown precision %q: use f16, bf16 or f32", c.precision)
	case c.epochs < 1 || c.batch < 1 || c.logEvery < 1:
		return fmt.Errorf("-epochs, -batch and -log-every must be positive")
	case c.model != "" && c.model != "mlp" && c.model != "cnn": // "" is mlp, as in trainer.Options
		return fmt.Errorf("unknown -model %q: use mlp or cnn", c.model)
	case !(c.lr >= 0) || c.lr > 1e3:
		return fmt.Errorf("-lr %g must be positive", c.lr)
	case !(c.gamma >= 0) || c.gamma > 1:
		return fmt.Errorf("-gamma %g must be in (0, 1]", c.gamma)
	case !(c.initScale > 0) || c.initScale > math.MaxFloat32:
		return fmt.Errorf("-init-scale %g must be positive and finite in float32", c.initScale)
	case c.resume && c.checkpoint == "":
		return errors.New("-resume needs -checkpoint DIR")
	case c.timeout < 0:
		return fmt.Errorf("-collective-timeout %v must be 0 or positive", c.timeout)
	case c.trainSamples < 0 || c.testSamples < 0:
		return fmt.Errorf("-train-samples %d and -test-samples %d must be 0 (all) or positive", c.trainSamples, c.testSamples)
	case c.checkpointEvery < 0:
		return fmt.Errorf("-checkpoint-every %d must be 0 or positive", c.checkpointEvery)
	case c.checkpointEvery > 0 && c.checkpoint == "":
		return errors.New("-checkpoint-every needs -checkpoint DIR")
	}
	if c.checkpoint != "" {
		if err := checkpoint.CheckWritableDir(c.checkpoint); err != nil {
			return err // found now, not at the first save after an epoch of training
		}
	}
	if c.reportPath != "" {
		return report.CheckWritable(c.reportPath)
	}
	return nil
}

func run(ctx context.Context, c config, out, bars io.Writer) error {
	if err := c.check(); err != nil {
		return err
	}
	train, test, err := mnist.Load(c.data)
	if err != nil {
		return err
	}
	if c.trainSamples > 0 {
		train = train.Subset(c.trainSamples)
	}
	if c.testSamples > 0 {
		test = test.Subset(c.testSamples)
	}
	rs, err := ranks.Open(c.device, c.devices, vk.Options{Timestamps: c.profile}, dist.Options{Timeout: c.timeout})
	if err != nil {
		return err
	}
	defer ranks.Close(rs)
	if rs[0].G.Rank() != 0 { // under mpirun: rank 0 speaks
		out, bars = io.Discard, io.Discard
		c.json, c.reportPath = false, ""
	}
	var jsonw io.Writer
	if c.json { // stdout holds the JSON objects only
		jsonw, out = out, bars
	}
	for _, r := range rs {
		info := r.D.Info()
		fmt.Fprintf(out, "rank %d of %d: device %d: %s (%s, %s %s), tier %s\n", r.G.Rank(), r.G.Size(), info.Index, info.Name, info.Type, info.DriverName, info.DriverInfo, r.D.Tier())
	}
	fmt.Fprintf(out, "data: %d training and %d test digits from %s\n", train.N, test.N, c.data)
	runs := []report.Run{}
	start := time.Now()
	r, err := trainRanks(ctx, c, rs, train, test, c.precision, out, bars, jsonw)
	if err != nil {
		return err
	}
	runs = append(runs, r)
	if c.compare {
		other := c
		other.checkpoint, other.checkpointEvery, other.resume = "", 0, false
		other.precision = "f32" // mixed precision against fp32, fp32 against fp16
		if c.precision == "f32" {
			other.precision = "f16"
		}
		r, err := trainRanks(ctx, other, rs, train, test, other.precision, out, bars, jsonw)
		if err != nil {
			return err
		}
		runs = append(runs, r)
	}
	if c.profile {
		profile.Print(out, rs[0].D, time.Since(start))
	}
	if c.reportPath != "" {
		if err := report.Write(c.reportPath, runs...); err != nil {
			return err
		}
		fmt.Fprintln(out, "report:", c.reportPath)
	}
	return nil
}

func precisionName(precision string) string {
	return map[string]string{"f16": "fp16 AMP", "bf16": "bf16 AMP", "f32": "fp32"}[precision]
}

// collapseAfter is how many steps skipped in a row stop a run: the loss
// scale has halved that many times, so it has collapsed (or every gradient
// is inf or NaN). A healthy run skips a few steps in a row at most, while
// its scale finds its level.
const collapseAfter = 50

// errCollapsed is the error of a run stopped by a collapsed loss scale.
var errCollapsed = errors.New("the loss scale has collapsed")

func trainRun(ctx context.Context, c config, d *vk.Device, g dist.Group, train, test *mnist.Set, precision string, out, bars, jsonw io.Writer) (report.Run, error) {
	fp16 := precision == "f16"
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var halted error // why OnStep stopped the run
	halt := func(err error) {
		if halted == nil {
			halted = err
		}
		cancel()
	}
	hist := report.Run{Name: precisionName(precision), StepsPerEpoch: train.N / c.batch}
	var bar *progress.Bar
	var pending []trainer.Step
	inRow := 0 // steps skipped in a row, up to the last one read
	var tr *trainer.Trainer
	tr, err := trainer.New(trainer.Options{Device: d, Group: g, Train: train, Test: test, Model: c.model, Batch: c.batch, LR: c.lr, Gamma: c.gamma, FP16: fp16, BF16: precision == "bf16",
		Seed: c.seed, LossEvery: c.logEvery, Replay: c.replay && !c.profile, Scaler: scaler.Options{InitScale: c.initScale},
		OnStep: func(s trainer.Step) {
			step := tr.StepsDone()
			pending = append(pending, s)
			// Read the skips when the loss was read this step (they cost no
			// extra wait then), and before the oldest goes stale.
			if read := s.Loss == s.Loss; read || len(pending) == 8 {
				for i, p := range pending {
					v, err := p.Skipped.Value()
					if err != nil {
						halt(err)
						return
					}
					if !v {
						inRow = 0
						continue
					}
					hist.Skipped = append(hist.Skipped, step-len(pending)+1+i)
					if inRow++; inRow == collapseAfter {
						scale, err := tr.Scaler().ScaleValue()
						if err == nil {
							err = fmt.Errorf("%w: %d steps in a row were skipped for inf or NaN gradients and the scale is now %g; "+
								"training stopped (skipped steps left the weights as they were) and no checkpoint was written: "+
								"check the data and -lr, or resume from the last checkpoint", errCollapsed, inRow, scale)
						}
						halt(err)
					}
				}
				pending = pending[:0]
				if !read {
					bar.Add(1)
					return
				}
				hist.LossSteps = append(hist.LossSteps, step)
				hist.StepLoss = append(hist.StepLoss, s.Loss)
				if fp16 {
					hist.ScaleSteps = append(hist.ScaleSteps, step)
					hist.Scale = append(hist.Scale, s.Scale)
				}
				bar.Describe(fmt.Sprintf("epoch %d  loss %.4f  scale %g  skipped %d", s.Epoch+1, s.Loss, s.Scale, len(hist.Skipped)))
			}
			bar.Add(1)
		}})
	if err != nil {
		return hist, err
	}
	defer tr.Close()
	if c.resume {
		extra, err := tr.Load(c.checkpoint)
		if err != nil {
			return hist, err
		}
		if raw, ok := extra["history"]; ok {
			if err := json.Unmarshal(raw, &hist); err != nil {
				return hist, fmt.Errorf("checkpoint history: %w", err)
			}
		}
		if done := tr.EpochsDone(); done >= c.epochs {
			// Nothing would train: say so rather than exit 0 in silence.
			return hist, fmt.Errorf("the checkpoint in %s has %d epochs done, and -epochs is %d: nothing to train (raise -epochs to train further)", c.checkpoint, done, c.epochs)
		}
		if pos := tr.StepInEpoch(); pos > 0 {
			fmt.Fprintf(out, "resumed from %s at epoch %d, step %d of %d\n", c.checkpoint, tr.EpochsDone()+1, pos+1, train.N/c.batch)
		} else {
			fmt.Fprintf(out, "resumed from %s at epoch %d\n", c.checkpoint, tr.EpochsDone()+1)
		}
	}
	save := func() error {
		if c.checkpoint == "" {
			return nil
		}
		raw, _ := json.Marshal(hist)
		return dist.Root(g, func() error { return tr.Save(c.checkpoint, map[string]json.RawMessage{"history": raw}) })
	}
	tr.SetCheckpointEvery(c.checkpointEvery, save)
	steps := train.N / c.batch
	for tr.EpochsDone() < c.epochs {
		// A bar on a terminal; plain lines now and then in a log.
		bar = progress.New(bars, progress.Options{Total: steps, Done: tr.StepInEpoch(), Unit: "steps",
			Description: fmt.Sprintf("epoch %d (%s)", tr.EpochsDone()+1, hist.Name)})
		e, err := tr.Epoch(ctx)
		bar.Finish()
		if halted != nil {
			return hist, halted // a collapsed scale, or a failed read of a skip: nothing is saved
		}
		if errors.Is(err, context.Canceled) {
			if serr := save(); serr != nil {
				return hist, serr
			}
			if c.checkpoint != "" {
				fmt.Fprintf(out, "checkpoint written to %s: continue with -resume\n", c.checkpoint)
			}
			return hist, err
		}
		if err != nil {
			return hist, err
		}
		hist.Loss = append(hist.Loss, e.TrainLoss)
		hist.Accuracy = append(hist.Accuracy, e.TestAccuracy)
		if jsonw != nil {
			if err := writeEpochJSON(jsonw, e); err != nil {
				return hist, err
			}
		}
		fmt.Fprintf(out, "%s epoch %d: train loss %.4f  test accuracy %.2f%%  scale %g  skipped %d  %.1fs (%.0f samples/s)\n",
			hist.Name, e.Epoch+1, e.TrainLoss, 100*e.TestAccuracy, e.Scale, e.Skipped, e.Duration.Seconds(),
			float64(e.Samples)/e.Duration.Seconds())
		if err := save(); err != nil {
			return hist, err
		}
	}
	rs := tr.ReplayStats()
	if c.profile && c.replay {
		rs.Fallback = "-profile times each kernel, and a captured step takes no timestamps"
	}
	fmt.Fprintf(out, "%s steps: %d replayed, %d captured, %d recorded%s; %s\n", hist.Name, rs.Replayed, rs.Captured, rs.Recorded, fallbackNote(rs.Fallback), gatherNote(tr))
	return hist, nil
}

// fallbackNote says why steps were recorded rather than replayed.
func fallbackNote(why string) string {
	if why == "" {
		return ""
	}
	return " (replay " + map[bool]string{true: why, false: "off: " + why}[why == "off"] + ")"
}

// gatherNote says where each batch was gathered.
func gatherNote(tr *trainer.Trainer) string {
	if on, why := tr.DataOnDevice(); !on {
		return "batches gathered on the host (" + why + ")"
	}
	return "batches gathered on the device"
}

// epochJSON is the object -json writes per epoch.
type epochJSON struct {
	Epoch        int           `json:"epoch"` // from 1
	TrainLoss    jsonnum.Float `json:"train_loss"`
	TestAccuracy float64       `json:"test_accuracy"`
	SamplesPerS  float64       `json:"samples_per_s"`
	Scale        jsonnum.Float `json:"scale"` // the loss scale; 1 in fp32
}

func writeEpochJSON(w io.Writer, e trainer.Epoch) error {
	b, err := json.Marshal(epochJSON{Epoch: e.Epoch + 1, TrainLoss: jsonnum.Float(e.TrainLoss), TestAccuracy: e.TestAccuracy,
		SamplesPerS: float64(e.Samples) / e.Duration.Seconds(), Scale: jsonnum.Float(e.Scale)})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}
