// Command gpt trains a character-level GPT on Tiny Shakespeare with fp16
// automatic mixed precision (or fp32) on the best Vulkan device found, as
// nanoGPT's shakespeare_char recipe, and samples from it.
//
//	go run ./tools/gpt [-recipe cpu|gpu|tiny] [-iters N] [-dropout P] [-precision f16|bf16|f32] [-report loss.png]
//	                   [-checkpoint DIR [-resume]] [-sample 500 -temperature 0.8 -top-k 200] [-json]
//	go run ./tools/gpt -checkpoint DIR -resume -eval-only [-eval-iters 200]
//	go run ./tools/gpt [-init-from nanogpt.safetensors] [-export out.safetensors]   # nanoGPT's weights in and out
//
// The recipes are nanoGPT's (config/train_shakespeare_char.py, and its
// README's command for a CPU):
//
//	cpu: 4 layers, 4 heads, 128 dims, context 64, batch 12, 2,000 iterations,
//	     no dropout, 20 evaluation batches (nanoGPT: validation loss 1.88)
//	gpu: 6 layers, 6 heads, 384 dims, context 256, batch 64, 5,000 iterations,
//	     dropout 0.2, 200 evaluation batches (nanoGPT: 1.4697)
//	tiny: 2 layers, 2 heads, 32 dims, context 16, batch 4, 30 iterations,
//	     dropout 0.1, lr 1e-2 to 1e-3 after 5 warm-up iterations: seconds
//	     on a software driver, for checks (scripts/check-deterministic.sh)
//
// both with AdamW (lr 1e-3, betas 0.9 and 0.99, weight decay 0.1 on the
// 2-D weights only), a linear warm-up over 100 iterations then a cosine
// decay to 1e-4 at the last iteration, gradient clipping at norm 1, and
// an evaluation (the mean loss over random batches of each split) every
// 250 iterations and after the last. With fp16 the loop is PyTorch's AMP
// loop: autocast forward, backward from the scaled loss, unscale, clip,
// step (skipped on an inf or NaN gradient), update the scale.
//
// With -json, stdout gets one JSON object per evaluation, the last line
// being the final one (a non-finite loss as null), and everything else
// goes to stderr. Ctrl-C finishes
// the current iteration, writes a checkpoint if -checkpoint is set, and
// exits; -resume continues from the latest checkpoint to the same result
// as an uninterrupted run, bit for bit. -eval-only (nanoGPT's eval_only)
// evaluates the model, with -resume a checkpoint's, and exits: with
// -eval-iters 200 it tells how far a 20-batch figure is from the model's
// loss (the standard errors of the means are printed too).
//
// -replay (the default) captures the training step once and replays it
// (tensor.Replayer), as CUDA graphs do: the batch and the dropout seed are
// written into tensors the step reads, and AdamW reads the scheduled
// learning rate on the device, so every iteration replays the same
// capture with the same results as recording it. Data-parallel runs and
// -profile record every step. The run ends with the counts.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vkamp/vkamp/checkpoint"
	"github.com/vkamp/vkamp/tools/internal/report"
)

// recipe is a model and its training schedule.
type recipe struct {
	layers, heads, dim, block, batch int
	iters, evalEvery, evalIters      int
	dropout                          float32
	lr, minLR, beta1, beta2, wd      float64
	warmup                           int
	clip                             float64
}

var recipes = map[string]recipe{
	"cpu": {layers: 4, heads: 4, dim: 128, block: 64, batch: 12, iters: 2000, evalEvery: 250, evalIters: 20,
		lr: 1e-3, minLR: 1e-4, beta1: 0.9, beta2: 0.99, wd: 0.1, warmup: 100, clip: 1},
	"gpu": {layers: 6, heads: 6, dim: 384, block: 256, batch: 64, iters: 5000, evalEvery: 250, evalIters: 200, dropout: 0.2,
		lr: 1e-3, minLR: 1e-4, beta1: 0.9, beta2: 0.99, wd: 0.1, warmup: 100, clip: 1},
	// tiny is for checks of seconds on a software driver (such as
	// scripts/check-deterministic.sh), not for a model worth sampling.
	"tiny": {layers: 2, heads: 2, dim: 32, block: 16, batch: 4, iters: 30, evalEvery: 10, evalIters: 2, dropout: 0.1,
		lr: 1e-2, minLR: 1e-3, beta1: 0.9, beta2: 0.99, wd: 0.1, warmup: 5, clip: 1},
}

type config struct {
	recipe
	data, recipeName, precision, device, checkpoint, reportPath, prompt string
	initFrom, export                                                    string
	devices                                                             string
	timeout                                                             time.Duration
	sample, topK                                                        int
	temperature                                                         float64
	seed                                                                uint64
	resume, json, profile, evalOnly                                     bool
	replay                                                              bool // capture the training step once and replay it
	// stopAt, in tests, stops the run at that iteration as Ctrl-C would;
	// stopEvalAt inside the evaluation at that iteration.
	stopAt, stopEvalAt int
}

func main() {
	var c config
	var iters, evalEvery, evalIters int
	var dropout float64
	flag.StringVar(&c.data, "data", "testdata/tinyshakespeare/input.txt", "UTF-8 text to train on (first 90% train, last 10% validation)")
	flag.StringVar(&c.recipeName, "recipe", "cpu", "cpu or gpu: nanoGPT's shakespeare_char model and schedule (see go doc ./tools/gpt); tiny: a model of seconds, for checks")
	flag.Float64Var(&dropout, "dropout", -1, "dropout probability (negative: the recipe's)")
	flag.IntVar(&iters, "iters", 0, "training iterations (0: the recipe's); the learning rate decays to its minimum at the last")
	flag.IntVar(&evalEvery, "eval-every", 0, "evaluate every this many iterations (0: the recipe's 250)")
	flag.IntVar(&evalIters, "eval-iters", 0, "batches per split in an evaluation (0: the recipe's)")
	flag.StringVar(&c.precision, "precision", "f16", "f16 (autocast and loss scaling), bf16 (autocast, no loss scaling) or f32")
	flag.StringVar(&c.device, "device", "", "device index or name substring (default: VKAMP_DEVICE, else the best)")
	flag.StringVar(&c.devices, "devices", "", "comma-separated devices to train on data-parallel, one rank each, every batch split among them (under mpirun, built with -tags mpi: rank r takes entry r mod their number)")
	flag.Uint64Var(&c.seed, "seed", 1337, "seed of the weights, the batches, dropout and sampling")
	flag.DurationVar(&c.timeout, "collective-timeout", 0, "how long a rank waits in a collective for the others before it fails (0: 10 minutes)")
	flag.StringVar(&c.checkpoint, "checkpoint", "", "directory to write a checkpoint to at each evaluation, at the end and on Ctrl-C")
	flag.BoolVar(&c.resume, "resume", false, "continue from the checkpoint in -checkpoint")
	flag.StringVar(&c.initFrom, "init-from", "", "start from the weights of a nanoGPT model.state_dict() saved as safetensors (its names, fp32, fp16 or bf16; the model's size must match)")
	flag.StringVar(&c.export, "export", "", "after training, write the weights here as a nanoGPT state dict in safetensors, for model.load_state_dict(..., strict=False)")
	flag.BoolVar(&c.evalOnly, "eval-only", false, "evaluate the model (with -resume, the checkpoint's) over -eval-iters batches a split, with the standard errors, and exit without training, as nanoGPT's eval_only")
	flag.StringVar(&c.reportPath, "report", "", "write a PNG of the loss curves and the loss scale here")
	flag.IntVar(&c.sample, "sample", 0, "after training, print this many generated characters")
	flag.StringVar(&c.prompt, "prompt", "\n", "the text the sample continues")
	flag.Float64Var(&c.temperature, "temperature", 0.8, "sampling temperature (0: always the likeliest)")
	flag.IntVar(&c.topK, "top-k", 200, "sample from the k likeliest characters only (0: all)")
	flag.BoolVar(&c.json, "json", false, "print one JSON object per evaluation on stdout, the rest on stderr")
	flag.BoolVar(&c.profile, "profile", false, "time every kernel on the device and print where the training time went (steps are recorded, not replayed)")
	flag.BoolVar(&c.replay, "replay", true, "capture the training step's command buffers once and replay them for the following iterations (same results; data-parallel and -profile runs record every step)")
	flag.Parse()
	r, ok := recipes[c.recipeName]
	if !ok {
		fmt.Fprintf(os.Stderr, "gpt: unknown recipe %q: use cpu, gpu or tiny\n", c.recipeName)
		os.Exit(2)
	}
	c.recipe = r
	c.dropout = dropoutFlag(dropout, r.dropout)
	c.iters = pick(iters, r.iters)
	c.evalEvery = pick(evalEvery, r.evalEvery)
	c.evalIters = pick(evalIters, r.evalIters)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out, log := io.Writer(os.Stdout), io.Writer(os.Stdout)
	if c.json {
		log = os.Stderr
	}
	err := run(ctx, c, out, log, os.Stderr)
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "gpt: interrupted")
		os.Exit(130)
	case err != nil:
		fmt.Fprintln(os.Stderr, "gpt:", err)
		os.Exit(1)
	}
}

// dropoutFlag is -dropout's value: the recipe's when negative (the flag
// left unset), else the value, NaN included, for check to refuse.
func dropoutFlag(v float64, recipe float32) float32 {
	if v < 0 {
		return recipe
	}
	return float32(v)
}

// pick is v, or def when v is 0 (a flag left unset).
func pick(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func (c config) check() error {
	switch {
	case c.precision != "f16" && c.precision != "bf16" && c.precision != "f32":
		return fmt.Errorf("unknown precision %q: use f16, bf16 or f32", c.precision)
	case c.iters < 1 || c.evalEvery < 1 || c.evalIters < 1:
		return fmt.Errorf("-iters %d, -eval-every %d and -eval-iters %d must be positive", c.iters, c.evalEvery, c.evalIters)
	case c.sample < 0:
		return fmt.Errorf("-sample %d must be 0 or positive", c.sample)
	case !(c.temperature >= 0) || c.temperature > 1e6:
		return fmt.Errorf("-temperature %g must be in [0, 1e6]", c.temperature)
	case c.topK < 0:
		return fmt.Errorf("-top-k %d must be 0 or positive", c.topK)
	case c.sample > 0 && c.prompt == "":
		return errors.New("-prompt must not be empty")
	case c.resume && c.checkpoint == "":
		return errors.New("-resume needs -checkpoint DIR")
	case c.resume && c.initFrom != "":
		return errors.New("-init-from and -resume both say where the weights come from: give one")
	case c.timeout < 0:
		return fmt.Errorf("-collective-timeout %v must be 0 or positive", c.timeout)
	case !(c.dropout >= 0 && c.dropout < 1):
		return fmt.Errorf("-dropout %g must be in [0, 1)", c.dropout)
	case c.layers < 1 || c.heads < 1 || c.dim%c.heads != 0 || c.block < 1 || c.batch < 1:
		return fmt.Errorf("model %d layers, %d heads, %d dims, context %d, batch %d: the sizes must be positive and dims a multiple of heads",
			c.layers, c.heads, c.dim, c.block, c.batch)
	}
	if c.checkpoint != "" {
		if err := checkpoint.CheckWritableDir(c.checkpoint); err != nil {
			return err // found now, not at the first save after an epoch of training
		}
	}
	if c.export != "" {
		if err := checkpoint.CheckWritableDir(filepath.Dir(c.export)); err != nil {
			return fmt.Errorf("-export %s: %w", c.export, err)
		}
	}
	if c.reportPath != "" {
		return report.CheckWritable(c.reportPath)
	}
	return nil
}
