package bench

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/nn/gpt"
	"github.com/vkamp/vkamp/scaler"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// GPTSize sizes the GPT of ReplayGPT.
type GPTSize struct{ Layers, Heads, Dim, Block, Batch int }

// GPTCPU is tools/gpt's CPU recipe's model and batch.
var GPTCPU = GPTSize{Layers: 4, Heads: 4, Dim: 128, Block: 64, Batch: 12}

// replayGPT is tools/gpt's training step on random tokens, with what
// changes per step (the batch, the dropout seed, the learning rate) written
// before it into tensors it reads, as tools/gpt replays it.
type replayGPT struct {
	d      *vk.Device
	m      *gpt.Model
	opt    *nn.Adam
	sc     *scaler.Scaler
	clip   nn.NormClipper
	seeds  *nn.SeedSource
	x, y   *tensor.Tensor
	seed   *tensor.Tensor
	xb, yb []byte
	batch  int
	tokens *rand.Rand
}

func newReplayGPT(d *vk.Device, z GPTSize) (*replayGPT, error) {
	const vocab = 65
	block, batch := z.Block, z.Batch
	g := &replayGPT{d: d, batch: batch, seeds: nn.NewSeedSource(1), tokens: rand.New(rand.NewPCG(2, 2)),
		xb: make([]byte, 4*batch*block), yb: make([]byte, 4*batch*block)}
	g.m = gpt.New(d, gpt.Config{Vocab: vocab, BlockSize: block, Layers: z.Layers, Heads: z.Heads, Dim: z.Dim, Dropout: 0.1}, rand.New(rand.NewPCG(1, 1)))
	g.m.SetTraining(true)
	if err := g.m.Err(); err != nil {
		g.m.Close()
		return nil, err
	}
	var err error
	if g.opt, err = nn.NewAdamGroups(nn.DecayGroups(g.m.Parameters(), 0.1), nn.AdamOptions{LR: 1e-3, Beta2: 0.99, Decoupled: true}); err != nil {
		g.m.Close()
		return nil, err
	}
	g.opt.KeepHalfWeights(true)
	if g.sc, err = scaler.New(scaler.Options{}); err != nil {
		g.close()
		return nil, err
	}
	g.x, g.y = tensor.New(d, tensor.Int32, batch*block), tensor.New(d, tensor.Int32, batch*block)
	g.seed = tensor.New(d, tensor.Int32, 1)
	if err := errors.Join(g.x.Err(), g.y.Err(), g.seed.Err()); err != nil {
		g.close()
		return nil, err
	}
	return g, nil
}

func (g *replayGPT) close() {
	for _, t := range []*tensor.Tensor{g.x, g.y, g.seed} {
		if t != nil {
			t.Release()
		}
	}
	if g.sc != nil {
		g.sc.Close()
	}
	g.clip.Close()
	g.opt.Close()
	g.m.Close()
}

// load writes random tokens, step i's dropout seed and learning rate.
func (g *replayGPT) load(i int) error {
	for j := 0; j < len(g.xb); j += 4 {
		binary.LittleEndian.PutUint32(g.xb[j:], uint32(g.tokens.IntN(65)))
		binary.LittleEndian.PutUint32(g.yb[j:], uint32(g.tokens.IntN(65)))
	}
	return errors.Join(g.x.SetBytes(g.xb), g.y.SetBytes(g.yb),
		g.seeds.NextTo(g.seed),
		g.opt.SetLR(1e-3*(1+float64(i%10)/10)))
}

// step is tools/gpt's iteration: autocast forward, scaled backward,
// unscale, clip, step, scale update; it reads nothing.
func (g *replayGPT) step() error {
	gr := nn.NewGraph(g.d, nn.Options{Autocast: tensor.Float16, DeviceSeed: g.seed})
	defer gr.Release()
	loss, _ := g.m.Loss(gr, g.x, g.y, g.batch)
	if err := g.opt.ZeroGrad(); err != nil {
		return err
	}
	if err := gr.Backward(loss, g.sc.Seed(loss.Value())); err != nil {
		return err
	}
	if err := g.sc.Unscale(g.opt); err != nil {
		return err
	}
	norm, err := g.clip.Clip(g.m.Parameters(), 1)
	if err != nil {
		return err
	}
	norm.Release()
	if _, err := g.sc.Step(g.opt); err != nil {
		return err
	}
	return g.sc.Update()
}

// ReplayGPT measures the host time of a GPT's training step replayed from
// a captured graph, against the same step recorded (replayPerDispatch):
// tools/gpt's step, with hundreds of dispatches, on random tokens of a
// vocabulary of 65, with dropout 0.1, fp16 AMP, AdamW (weight decay 0.1 on
// the matrices) given a new learning rate each step, clipping at norm 1.
func ReplayGPT(d *vk.Device, z GPTSize, steps int) (ReplayReport, error) {
	if steps < 1 || z.Layers < 1 || z.Heads < 1 || z.Dim%z.Heads != 0 || z.Block < 1 || z.Batch < 1 {
		return ReplayReport{}, fmt.Errorf("bench: GPT %+v, steps %d: want positive sizes, dims a multiple of heads", z, steps)
	}
	g, err := newReplayGPT(d, z)
	if err != nil {
		return ReplayReport{}, err
	}
	defer g.close()
	return replayPerDispatch(d, g, steps)
}

// ReplayGPTResults is ReplayGPT of a GPT of size z (tools/bench: GPTCPU)
// as results: dispatch/host-us/gpt (its recorded step), dispatch/replay-us/gpt
// and dispatch/replay-vs-record/gpt.
func ReplayGPTResults(d *vk.Device, z GPTSize, steps int) ([]Result, error) {
	r, err := ReplayGPT(d, z, steps)
	if err != nil {
		return nil, err
	}
	recipe := ""
	if z == GPTCPU {
		recipe = "tools/gpt's CPU recipe, "
	}
	gpt := fmt.Sprintf("a GPT (%s%d layers, %d heads, %d dims, context %d, batch %d), dropout 0.1, fp16 AMP, AdamW at a new rate each step, clipping,",
		recipe, z.Layers, z.Heads, z.Dim, z.Block, z.Batch)
	// The recorded step's host time per dispatch, as dispatch/host-us
	// measures the MLP's: a transformer's step has many more dispatches
	// for what it costs once per step (the batch, the graph, the scaler).
	host := Result{Name: "dispatch/host-us/gpt", Value: float64(r.Record+r.RecordLoad) / 1e3 / float64(max(r.Dispatches, 1)), Unit: "us per dispatch",
		Detail: fmt.Sprintf("host time recording the training step of %s on a drained device, %.3g us with %.3g us writing its batch, seed and rate, over its %d dispatches; fastest of %d steps",
			gpt, float64(r.Record+r.RecordLoad)/1e3, float64(r.RecordLoad)/1e3, r.Dispatches, r.Samples)}
	return append(onDevice(d, []Result{host}), replayResults(d, r, "/gpt", "the captured training step of "+gpt, "the batch, seed and rate")...), nil
}
