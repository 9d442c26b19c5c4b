// Command charlstm trains a character-level LSTM language model on a text
// (Tiny Shakespeare by default, nanoGPT's split and vocabulary) with
// automatic mixed precision, and reports its validation loss: an
// Embedding, an nn.LSTM and a Linear head, cross-entropy over every
// position, Adam, gradient clipping and, in fp16, a loss scaler.
//
//	go run ./tools/charlstm [-precision f16|bf16|f32] [-iters 600] [-batch 32] [-seq 64]
//	                        [-hidden 128] [-layers 1] [-lr 2e-3] [-eval-every 100] [-json] [-profile]
//	                        [-sample 500 -prompt "ROMEO:" -temperature 0.8]
//
// Every -eval-every iterations (and at the end) it prints the training
// loss of the last step and the validation loss, the mean over -eval-iters
// random batches of the validation split, with the tokens per second
// trained since the last report. Batches come from data.Loader, drawn at
// random (nanoGPT's get_batch) from -seed and prepared while the device
// runs the step before. -sample N then continues -prompt by N characters,
// an LSTM step at a time, each drawn on the device (tensor.Multinomial).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/vkamp/vkamp/data"
	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/tools/internal/corpus"
	"github.com/vkamp/vkamp/tools/internal/profile"
	"github.com/vkamp/vkamp/vk"
)

// config is the command line.
type config struct {
	data, device, precision          string
	iters, batch, seq, hidden, embed int
	sample                           int
	prompt                           string
	temperature                      float64
	layers, evalEvery, evalIters     int
	lr, clip                         float64
	dropout                          float64
	seed                             uint64
	json, profile                    bool
	cpuProfile                       string
}

func parse(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("charlstm", flag.ContinueOnError)
	fs.StringVar(&c.data, "data", "testdata/tinyshakespeare/input.txt", "UTF-8 text to train on: the first 90% trains, the rest validates")
	fs.StringVar(&c.device, "device", "", "device index or name substring (default: VKAMP_DEVICE, else the best)")
	fs.StringVar(&c.precision, "precision", "f16", "f16 (autocast and a loss scaler), bf16 (autocast) or f32")
	fs.IntVar(&c.iters, "iters", 600, "training iterations")
	fs.IntVar(&c.batch, "batch", 32, "sequences per batch")
	fs.IntVar(&c.seq, "seq", 64, "characters per sequence (truncated backpropagation through time)")
	fs.IntVar(&c.embed, "embed", 64, "embedding width")
	fs.IntVar(&c.hidden, "hidden", 128, "LSTM hidden size")
	fs.IntVar(&c.layers, "layers", 1, "LSTM layers")
	fs.Float64Var(&c.dropout, "dropout", 0, "dropout between LSTM layers")
	fs.Float64Var(&c.lr, "lr", 2e-3, "Adam's learning rate")
	fs.Float64Var(&c.clip, "clip", 1, "gradient norm clip (0: none)")
	fs.IntVar(&c.evalEvery, "eval-every", 100, "iterations between validation reports")
	fs.IntVar(&c.evalIters, "eval-iters", 20, "validation batches per report")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the weights and the batches")
	fs.BoolVar(&c.json, "json", false, "print one JSON object per report")
	fs.IntVar(&c.sample, "sample", 0, "after training, print this many characters drawn from the model (tensor.Multinomial)")
	fs.StringVar(&c.prompt, "prompt", "\n", "the text the sample continues")
	fs.Float64Var(&c.temperature, "temperature", 0.8, "sampling temperature")
	fs.BoolVar(&c.profile, "profile", false, "time every kernel on the device and print where the training time went")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of the run to this file (go tool pprof)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case c.precision != "f16" && c.precision != "bf16" && c.precision != "f32":
		return c, fmt.Errorf("-precision %q: want f16, bf16 or f32", c.precision)
	case c.iters < 1 || c.batch < 1 || c.seq < 1 || c.hidden < 1 || c.embed < 1 || c.layers < 1 || c.evalEvery < 1 || c.evalIters < 1:
		return c, errors.New("-iters, -batch, -seq, -embed, -hidden, -layers, -eval-every and -eval-iters must be positive")
	case !(c.lr > 0) || c.clip < 0 || !(c.dropout >= 0 && c.dropout < 1):
		return c, errors.New("-lr must be positive, -clip not negative, -dropout in [0, 1)")
	case c.sample < 0 || !(c.temperature > 0) || (c.sample > 0 && c.prompt == ""):
		return c, errors.New("-sample must not be negative, -temperature must be positive, -prompt not empty")
	}
	return c, nil
}

func main() {
	c, err := parse(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "charlstm:", err)
		os.Exit(2)
	}
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "charlstm: -cpuprofile:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if _, err := run(ctx, c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "charlstm:", err)
		os.Exit(1)
	}
}

// report is one validation report.
type report struct {
	Iter      int     `json:"iter"`
	TrainLoss float64 `json:"train_loss"`
	ValLoss   float64 `json:"val_loss"`
	TokensSec float64 `json:"tokens_per_s"`
	Scale     float64 `json:"loss_scale,omitempty"`
}

// model is the language model: embedding, LSTM, linear head.
type model struct {
	emb  *nn.Embedding
	lstm *nn.Recurrent
	head *nn.Linear
}

func (m *model) params() []*nn.Param {
	return append(append(m.emb.Parameters(), m.lstm.Parameters()...), m.head.Parameters()...)
}

// loss is the mean cross-entropy of predicting the batch's targets from
// its inputs, both [batch, seq]. It returns the flattened targets too, a
// copy the caller releases once the graph is done with it.
func (m *model) loss(g *nn.Graph, batch data.Batch) (*nn.Var, *tensor.Tensor) {
	b, s := batch.X.Shape()[0], batch.X.Shape()[1]
	h := m.lstm.Forward(g, m.emb.Forward(g, batch.X)) // [batch, seq, hidden], batch first
	logits := m.head.Forward(g, g.Reshape(h, b*s, m.lstm.Opts.Hidden))
	labels := tensor.Reshape(batch.Y, b*s)
	return g.CrossEntropyLoss(logits, labels, nn.Mean), labels
}

// run trains as c says, writes the reports to out and returns the last.
func run(ctx context.Context, c config, out io.Writer) (report, error) {
	text, err := corpus.Load(ctx, c.data)
	if err != nil {
		return report{}, err
	}
	if err := text.Check(c.seq); err != nil {
		return report{}, err
	}
	if r, ok := text.Known(c.prompt); c.sample > 0 && !ok {
		return report{}, fmt.Errorf("-prompt: character %q is not in the vocabulary of %s", r, c.data)
	}
	d, err := vk.Open(vk.Options{Device: c.device, Timestamps: c.profile})
	if err != nil {
		return report{}, err
	}
	defer d.Close()
	rng := rand.New(rand.NewPCG(c.seed, 0x157))
	vocab := len(text.Chars)
	m := &model{
		emb:  nn.NewEmbedding(d, "embedding", vocab, c.embed, rng),
		lstm: nn.NewLSTM(d, "lstm", nn.RNNOptions{Input: c.embed, Hidden: c.hidden, Layers: c.layers, BatchFirst: true, Dropout: float32(c.dropout)}, rng),
		head: nn.NewLinear(d, "head", c.hidden, vocab, rng),
	}
	params := m.params()
	defer func() {
		for _, p := range params {
			p.Close()
		}
	}()
	opt, err := nn.NewAdam(params, nn.AdamOptions{LR: c.lr})
	if err != nil {
		return report{}, err
	}
	defer opt.Close()
	sc, err := scaler.New(scaler.Options{Disabled: c.precision != "f16"})
	if err != nil {
		return report{}, err
	}
	defer sc.Close()
	loaders := [2]*data.Loader{}
	for i, split := range [][]int32{text.Train, text.Val} {
		if loaders[i], err = data.New(d, &data.Tokens{Data: split, Block: c.seq}, data.Options{Batch: c.batch, Random: true, Seed: c.seed + uint64(i)}); err != nil {
			return report{}, err
		}
		defer loaders[i].Close()
	}
	autocast := map[string]tensor.DType{"f16": tensor.Float16, "bf16": tensor.BFloat16}[c.precision]
	fmt.Fprintf(os.Stderr, "charlstm: %s, vocabulary %d, %d training and %d validation characters; %s, %s\n",
		c.data, vocab, len(text.Train), len(text.Val), d.Info().Name, c.precision)

	var last report
	var lastLoss *tensor.Tensor
	start := time.Now()
	if c.profile {
		defer func(begin time.Time) { profile.Print(os.Stderr, d, time.Since(begin)) }(start)
	}
	for iter := 1; iter <= c.iters; iter++ {
		if err := ctx.Err(); err != nil {
			return last, err
		}
		b, _, err := loaders[0].Next()
		if err != nil {
			return last, err
		}
		nn.Train(m.lstm)
		loss, err := step(d, m, opt, sc, params, b, autocast, c.clip)
		if err != nil {
			return last, err
		}
		lastLoss.Release()
		lastLoss = loss
		if iter%c.evalEvery != 0 && iter != c.iters {
			continue
		}
		train, err := loss.Item()
		if err != nil {
			return last, err
		}
		secs := time.Since(start).Seconds()
		nn.Eval(m.lstm)
		val, err := evaluate(d, m, loaders[1], c.evalIters, autocast)
		if err != nil {
			return last, err
		}
		trained := min(c.evalEvery, iter-last.Iter)
		last = report{Iter: iter, TrainLoss: float64(train), ValLoss: val, TokensSec: float64(trained*c.batch*c.seq) / secs}
		if sc.Enabled() {
			if last.Scale, err = sc.ScaleValue(); err != nil {
				return last, err
			}
		}
		if c.json {
			json.NewEncoder(out).Encode(last)
		} else {
			fmt.Fprintf(out, "iter %5d: train loss %.4f, val loss %.4f, %.0f tokens/s\n", iter, last.TrainLoss, last.ValLoss, last.TokensSec)
		}
		start = time.Now()
	}
	lastLoss.Release()
	if math.IsNaN(last.ValLoss) {
		return last, errors.New("the validation loss is NaN")
	}
	if c.sample > 0 {
		nn.Eval(m.lstm)
		ids, err := generate(d, m, text.Encode(c.prompt), c.sample, float32(c.temperature), uint32(c.seed), autocast)
		if err != nil {
			return last, err
		}
		fmt.Fprintf(os.Stderr, "sample (temperature %g):\n%s%s\n", c.temperature, c.prompt, text.Decode(ids))
	}
	return last, nil
}

// generate continues prompt by n characters, one LSTM step at a time
// from the states the last left, each drawn on the device from the
// softmax of the logits over temperature (tensor.Multinomial).
func generate(d *vk.Device, m *model, prompt []int32, n int, temperature float32, seed uint32, autocast tensor.DType) ([]int32, error) {
	var h, c *tensor.Tensor // the states, [layers, 1, hidden]; nil: zeros
	defer func() { h.Release(); c.Release() }()
	var out []int32
	next := prompt
	for i := 0; len(out) < n; i++ {
		x := tensor.FromInt32(d, next, 1, len(next))
		g := nn.NewGraph(d, nn.Options{Autocast: autocast, NoGrad: true})
		var h0, c0 *nn.Var
		if h != nil {
			h0, c0 = g.Input(h), g.Input(c)
		}
		y, hn, cn := m.lstm.Run(g, m.emb.Forward(g, x), h0, c0) // [1, len, hidden]
		last := g.Narrow(y, 1, len(next)-1, 1)
		logits := m.head.Forward(g, g.Reshape(last, 1, m.lstm.Opts.Hidden))
		probs := g.Softmax(g.Scale(g.Cast(logits, tensor.Float32), 1/temperature), 1)
		draw := tensor.Multinomial(probs.Value(), 1, seed+uint32(i))
		h.Release()
		c.Release()
		h, c = tensor.Cast(hn.Value(), hn.DType()), tensor.Cast(cn.Value(), cn.DType())
		g.Release()
		x.Release()
		id, err := draw.Int32s()
		draw.Release()
		if err != nil {
			return out, err
		}
		out = append(out, id[0])
		next = id
	}
	return out, nil
}

// step is one AMP training step; it returns the step's loss, read by
// nobody unless a report needs it, so no step waits for the device.
func step(d *vk.Device, m *model, opt *nn.Adam, sc *scaler.Scaler, params []*nn.Param, b data.Batch, autocast tensor.DType, clip float64) (*tensor.Tensor, error) {
	g := nn.NewGraph(d, nn.Options{Autocast: autocast, Seeds: nn.NewSeedSource(uint64(b.Index))})
	defer g.Release()
	loss, labels := m.loss(g, b)
	defer labels.Release()
	if err := opt.ZeroGrad(); err != nil {
		return nil, err
	}
	if err := g.Backward(loss, sc.Seed(loss.Value())); err != nil {
		return nil, err
	}
	if clip > 0 {
		if err := sc.Unscale(opt); err != nil {
			return nil, err
		}
		norm, err := nn.ClipGradNorm(params, clip)
		if err != nil {
			return nil, err
		}
		norm.Release()
	}
	if _, err := sc.Step(opt); err != nil {
		return nil, err
	}
	if err := sc.Update(); err != nil {
		return nil, err
	}
	return tensor.Cast(loss.Value(), tensor.Float32), nil
}

// evaluate is the mean loss over n validation batches, without gradients.
func evaluate(d *vk.Device, m *model, l *data.Loader, n int, autocast tensor.DType) (float64, error) {
	sum := 0.0
	for range n {
		b, _, err := l.Next()
		if err != nil {
			return 0, err
		}
		g := nn.NewGraph(d, nn.Options{Autocast: autocast, NoGrad: true})
		loss, labels := m.loss(g, b)
		v, err := loss.Value().Item()
		g.Release()
		labels.Release()
		if err != nil {
			return 0, err
		}
		sum += float64(v)
	}
	return sum / float64(n), nil
}
