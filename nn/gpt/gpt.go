// Package gpt is GPT-2's model as nanoGPT's model.py writes it, composed
// from package nn's transformer blocks: token and learned position
// embeddings, pre-LayerNorm blocks of causal self-attention and a 4x GELU
// MLP, a final LayerNorm, and an output head tied to the token embedding.
// Weights start from normal(0, 0.02), the residual projections (c_proj)
// from normal(0, 0.02/sqrt(2*layers)).
//
// Tokens are Int32 ids in a tensor of batch*seq elements, sequence after
// sequence; activations stay 2-D, [batch*seq, dim]. Train with a Graph per
// step, as any nn model (with Options.Autocast for mixed precision); Sample
// and Generate are nanoGPT's sampler (temperature, top-k, multinomial).
//
// Sizes that cannot work (a dim not a multiple of heads, a sequence longer
// than the block size, ids that are not Int32) panic with a tensor usage,
// shape or dtype error; a parameter the device cannot hold is carried as
// an error that Err returns.
package gpt

import (
	"fmt"
	"math/rand/v2"

	"github.com/vkamp/vkamp/nn"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Config sizes a model; nanoGPT's GPTConfig.
type Config struct {
	Vocab     int     // vocabulary size
	BlockSize int     // the longest sequence (context length)
	Layers    int     // transformer blocks
	Heads     int     // attention heads per block
	Dim       int     // embedding width; a multiple of Heads
	Dropout   float32 // embedding, attention, residual and MLP dropout while training
	Bias      bool    // biases in Linears and LayerNorms (GPT-2: true; shakespeare_char: false)
}

// Model is a GPT. Its fields are the layers, named as nanoGPT's (without
// its "transformer." prefix): wte, wpe, h.0 ..., ln_f; the output head is
// WTE's weight.
type Model struct {
	Config  Config
	WTE     *nn.Embedding
	WPE     *nn.Embedding
	Blocks  []*nn.Block
	LNF     *nn.LayerNorm
	dropout nn.Dropout
	dev     *vk.Device
	pos     map[[2]int]*tensor.Tensor // position ids per (batch, seq), uploaded once
	err     error                     // of the initialisation
}

// New builds a model on d, its weights drawn from rng. Sizes below 1 or a
// Dim not a multiple of Heads panic with a *tensor.UsageError.
func New(d *vk.Device, c Config, rng *rand.Rand) *Model {
	if c.Vocab < 1 || c.BlockSize < 1 || c.Layers < 1 {
		panic(&tensor.UsageError{Op: "gpt.New", Msg: fmt.Sprintf("vocab %d, block size %d and layers %d must be at least 1", c.Vocab, c.BlockSize, c.Layers)})
	}
	if c.Heads < 1 || c.Dim < 1 || c.Dim%c.Heads != 0 || !(c.Dropout >= 0 && c.Dropout < 1) {
		panic(&tensor.UsageError{Op: "gpt.New", Msg: fmt.Sprintf("dim %d, heads %d, dropout %g: want a dim that is a multiple of heads and dropout in [0, 1)", c.Dim, c.Heads, c.Dropout)})
	}
	if rng == nil {
		panic(&tensor.UsageError{Op: "gpt.New", Msg: "nil rng"})
	}
	o := nn.BlockOptions{Dim: c.Dim, Heads: c.Heads, Bias: c.Bias, Dropout: c.Dropout, Layers: c.Layers}
	m := &Model{Config: c, dev: d, dropout: nn.Dropout{P: c.Dropout}, pos: map[[2]int]*tensor.Tensor{}}
	m.WTE = nn.NewEmbedding(d, "wte", c.Vocab, c.Dim, rng)
	m.WPE = nn.NewEmbedding(d, "wpe", c.BlockSize, c.Dim, rng)
	for _, e := range []*nn.Embedding{m.WTE, m.WPE} { // GPT-2's std, not PyTorch's 1
		if e.W.Err() == nil && m.err == nil { // else Err reports it
			m.err = nn.InitNormal(e.W, 0, 0.02, rng)
		}
	}
	for i := range c.Layers {
		m.Blocks = append(m.Blocks, nn.NewBlock(d, fmt.Sprintf("h.%d", i), o, rng))
	}
	if c.Bias {
		m.LNF = nn.NewLayerNorm(d, "ln_f", c.Dim)
	} else {
		m.LNF = nn.NewLayerNormNoBias(d, "ln_f", c.Dim)
	}
	return m
}

// Err returns the first parameter's error (one the device could not hold)
// or the initialisation's.
func (m *Model) Err() error {
	if m.err != nil {
		return fmt.Errorf("gpt: initialise the embeddings: %w", m.err)
	}
	for _, p := range m.Parameters() {
		if err := p.Err(); err != nil {
			return err
		}
	}
	return nil
}

// Parameters returns every parameter once (the head is wte): wte, wpe, the
// blocks in order, ln_f.
func (m *Model) Parameters() []*nn.Param {
	ps := []*nn.Param{m.WTE.W, m.WPE.W}
	for _, b := range m.Blocks {
		ps = append(ps, b.Parameters()...)
	}
	return append(ps, m.LNF.Parameters()...)
}

// NumParams returns the number of parameters; with nonEmbedding, less the
// position embedding, as nanoGPT reports it (the token embedding stays: it
// is also the output head).
func (m *Model) NumParams(nonEmbedding bool) int {
	n := 0
	for _, p := range m.Parameters() {
		n += p.Value.Len()
	}
	if nonEmbedding {
		n -= m.WPE.W.Value.Len()
	}
	return n
}

// SetTraining turns dropout on (training) or off (evaluation and sampling),
// as PyTorch's model.train() and model.eval().
func (m *Model) SetTraining(on bool) {
	m.dropout.Training = on
	for _, b := range m.Blocks {
		b.SetTraining(on)
	}
}

// Close releases the parameters and the position ids.
func (m *Model) Close() error {
	for _, p := range m.Parameters() {
		p.Close()
	}
	for k, t := range m.pos {
		t.Release()
		delete(m.pos, k)
	}
	return nil
}

// positions returns the Int32 position ids 0..seq-1, batch times, kept for
// the next step of the same shape.
func (m *Model) positions(batch, seq int) *tensor.Tensor {
	k := [2]int{batch, seq}
	if t, ok := m.pos[k]; ok {
		return t
	}
	ids := make([]int32, batch*seq)
	for i := range ids {
		ids[i] = int32(i % seq)
	}
	t := tensor.FromInt32(m.dev, ids, batch*seq)
	m.pos[k] = t
	return t
}

// Forward returns the logits [batch*seq, vocab] of idx, Int32 token ids of
// batch sequences of equal length seq (batch*seq elements, sequence after
// sequence). A seq over the block size, a length not a multiple of batch,
// or ids of another dtype panic; an id outside [0, vocab) is reported as
// the embedding reports it.
func (m *Model) Forward(g *nn.Graph, idx *tensor.Tensor, batch int) *nn.Var {
	seq := m.checkIdx("gpt.Forward", idx, batch)
	tok := g.Embedding(g.Param(m.WTE.W), idx)
	pos := g.Embedding(g.Param(m.WPE.W), m.positions(batch, seq))
	x := m.dropout.Forward(g, g.Add(tok, pos))
	for _, b := range m.Blocks {
		x = b.Forward(g, x, batch)
	}
	x = m.LNF.Forward(g, x)
	return g.MatMul(x, g.Param(m.WTE.W), false, true) // the head, tied to wte
}

// Loss returns the mean cross-entropy of the logits of idx against targets
// (Int32, idx's length), and the logits.
func (m *Model) Loss(g *nn.Graph, idx, targets *tensor.Tensor, batch int) (loss, logits *nn.Var) {
	logits = m.Forward(g, idx, batch)
	return g.CrossEntropyLoss(logits, targets, nn.Mean), logits
}

func (m *Model) checkIdx(op string, idx *tensor.Tensor, batch int) int {
	if idx == nil {
		panic(&tensor.UsageError{Op: op, Msg: "nil ids"})
	}
	if idx.DType() != tensor.Int32 {
		panic(&tensor.DTypeError{Op: op, Got: idx.DType(), Want: "int32 token ids"})
	}
	n := idx.Len()
	if batch < 1 || n == 0 || n%batch != 0 || n/batch > m.Config.BlockSize {
		panic(&tensor.ShapeError{Op: op, A: idx.Shape(), B: []int{batch, m.Config.BlockSize},
			Msg: "want batch*seq ids, seq from 1 to the block size (the second shape is [batch, block size])"})
	}
	return n / batch
}
