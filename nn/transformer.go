package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// The building blocks of a GPT-2 style transformer, as nanoGPT's model.py
// writes them: causal self-attention with one fused q/k/v projection, a 4x
// MLP with exact GELU, and a pre-LayerNorm residual block. Activations stay
// 2-D, [batch*seq, dim], rows ordered batch-major (the rows of sequence b
// are b*seq .. b*seq+seq-1), so every Linear is one matrix product; only
// attention needs to know the batch, and takes it as an argument.

// BlockOptions size and initialise the transformer blocks. Zero fields take
// the defaults in brackets.
type BlockOptions struct {
	Dim   int // model width C
	Heads int // attention heads; Dim must be a multiple
	// Bias gives every Linear and LayerNorm a bias (GPT-2); nanoGPT's
	// shakespeare_char recipe has none.
	Bias bool
	// Dropout is the probability of the attention, residual and MLP
	// dropouts (nanoGPT's attn_dropout, resid_dropout and the MLP's),
	// applied while the module's Training is set. Attention with dropout
	// runs composed from graph ops rather than fused (see
	// Graph.CausalSelfAttentionDropout).
	Dropout float32
	// Std is the standard deviation of the normal(0, Std) weights [0.02];
	// biases start at 0, LayerNorm scales at 1.
	Std float64
	// ProjStd is that of the residual projections (the output projections
	// of attention and MLP, c_proj) [Std/sqrt(2*Layers)], GPT-2's scaling
	// for the residual stream's growth over the layers.
	ProjStd float64
	// Layers is the depth, used only for ProjStd's default [1].
	Layers int
}

// withDefaults fills the zero fields and panics with a *tensor.UsageError
// naming the layer for sizes that cannot work.
func (o BlockOptions) withDefaults(op, name string) BlockOptions {
	checkSizes(op, name, fmt.Sprintf("dim %d, heads %d", o.Dim, o.Heads), o.Dim, o.Heads)
	if o.Dim%o.Heads != 0 {
		panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("layer %q: dim %d is not a multiple of heads %d", name, o.Dim, o.Heads)})
	}
	if !(o.Dropout >= 0 && o.Dropout < 1) {
		panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("layer %q: dropout %g is not in [0, 1)", name, o.Dropout)})
	}
	if o.Std < 0 || o.ProjStd < 0 || math.IsNaN(o.Std) || math.IsNaN(o.ProjStd) || o.Layers < 0 {
		panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("layer %q: negative std or layers", name)})
	}
	if o.Std == 0 {
		o.Std = 0.02
	}
	if o.Layers == 0 {
		o.Layers = 1
	}
	if o.ProjStd == 0 {
		o.ProjStd = o.Std / math.Sqrt(2*float64(o.Layers))
	}
	return o
}

// newNormal returns a parameter of shape drawn from normal(0, std) with
// rng; a tensor the device cannot hold is carried as an error, as
// newUniform does.
func newNormal(d *vk.Device, name string, std float64, rng *rand.Rand, shape ...int) *Param {
	probe := tensor.New(d, tensor.Float32, shape...)
	if probe.Err() != nil {
		return &Param{Name: name, Value: probe, Grad: tensor.Zeros(d, tensor.Float32, shape...)}
	}
	probe.Release()
	v := make([]float32, checkSizes("NewParam", name, fmt.Sprintf("shape %v", shape), shape...))
	for i := range v {
		v[i] = float32(rng.NormFloat64() * std)
	}
	return NewParam(d, name, v, shape...)
}

// newLinearNormal is a Linear [out, in] with normal(0, std) weights and,
// when bias, a zero bias: GPT-2's initialisation.
func newLinearNormal(d *vk.Device, name string, in, out int, bias bool, std float64, rng *rand.Rand) *Linear {
	l := &Linear{W: newNormal(d, name+".weight", std, rng, out, in)}
	if bias {
		l.B = NewParam(d, name+".bias", make([]float32, out), out)
	}
	return l
}

func newLayerNorm(d *vk.Device, name string, features int, bias bool) *LayerNorm {
	if bias {
		return NewLayerNorm(d, name, features)
	}
	return NewLayerNormNoBias(d, name, features)
}

// checkRows panics with a *tensor.ShapeError naming op unless x is
// [batch*seq, dim] for a whole seq.
func checkRows(op string, x *Var, batch, dim int) {
	s := x.Shape()
	if len(s) != 2 || s[1] != dim || batch < 1 || s[0]%batch != 0 || s[0] == 0 {
		panic(&tensor.ShapeError{Op: op, A: s, B: []int{batch, dim},
			Msg: fmt.Sprintf("want x [batch*seq, %d] for batch %d (the second shape is [batch, dim])", dim, batch)})
	}
}

// CausalSelfAttention is multi-head causal self-attention as GPT-2's: one
// fused projection to queries, keys and values (c_attn, [3C, C], its
// output q|k|v along the columns), scaled-dot-product attention in which
// each position sees itself and the positions before it in its own
// sequence, then the output projection (c_proj, [C, C]) and dropout.
type CausalSelfAttention struct {
	QKV, Proj   *Linear
	Heads       int
	AttnDropout Dropout // on the attention probabilities; set Training to apply it
	Dropout     Dropout // the residual dropout; set Training to apply it
}

// NewCausalSelfAttention returns attention of o.Dim and o.Heads, with its
// Linears named name+".c_attn" and name+".c_proj" (nanoGPT's names), drawn
// from rng. Bad sizes panic with a *tensor.UsageError naming the layer.
func NewCausalSelfAttention(d *vk.Device, name string, o BlockOptions, rng *rand.Rand) *CausalSelfAttention {
	o = o.withDefaults("NewCausalSelfAttention", name)
	if rng == nil {
		panic(&tensor.UsageError{Op: "NewCausalSelfAttention", Msg: fmt.Sprintf("layer %q: nil rng", name)})
	}
	return &CausalSelfAttention{
		QKV:         newLinearNormal(d, name+".c_attn", o.Dim, 3*o.Dim, o.Bias, o.Std, rng),
		Proj:        newLinearNormal(d, name+".c_proj", o.Dim, o.Dim, o.Bias, o.ProjStd, rng),
		Heads:       o.Heads,
		AttnDropout: Dropout{P: o.Dropout},
		Dropout:     Dropout{P: o.Dropout},
	}
}

// Forward attends over x, [batch*seq, C] in batch-major rows, and returns
// [batch*seq, C]. x of another shape panics with a *tensor.ShapeError.
func (a *CausalSelfAttention) Forward(g *Graph, x *Var, batch int) *Var {
	checkRows("CausalSelfAttention", x, batch, a.Proj.W.Value.Shape()[0])
	qkv := a.QKV.Forward(g, x)
	var y *Var
	if a.AttnDropout.Training {
		y = g.CausalSelfAttentionDropout(qkv, batch, a.Heads, a.AttnDropout.P)
	} else {
		y = g.CausalSelfAttention(qkv, batch, a.Heads)
	}
	return a.Dropout.Forward(g, a.Proj.Forward(g, y))
}

// SetTraining turns the dropouts on (training) or off (a TrainingSetter).
func (a *CausalSelfAttention) SetTraining(on bool) {
	a.AttnDropout.Training, a.Dropout.Training = on, on
}

// Parameters returns c_attn's and c_proj's parameters.
func (a *CausalSelfAttention) Parameters() []*Param {
	return append(a.QKV.Parameters(), a.Proj.Parameters()...)
}

// MLP is the transformer's feed-forward layer: Linear to 4C (c_fc), exact
// (erf) GELU, Linear back to C (c_proj), dropout. It is a Module: it works
// row by row and needs no batch.
type MLP struct {
	FC, Proj *Linear
	Dropout  Dropout // set Training to apply it
}

// NewMLP returns the MLP of o.Dim, its Linears named name+".c_fc" and
// name+".c_proj", drawn from rng.
func NewMLP(d *vk.Device, name string, o BlockOptions, rng *rand.Rand) *MLP {
	o = o.withDefaults("NewMLP", name)
	if rng == nil {
		panic(&tensor.UsageError{Op: "NewMLP", Msg: fmt.Sprintf("layer %q: nil rng", name)})
	}
	return &MLP{
		FC:      newLinearNormal(d, name+".c_fc", o.Dim, 4*o.Dim, o.Bias, o.Std, rng),
		Proj:    newLinearNormal(d, name+".c_proj", 4*o.Dim, o.Dim, o.Bias, o.ProjStd, rng),
		Dropout: Dropout{P: o.Dropout},
	}
}

// Forward applies the MLP to x [N, C].
func (m *MLP) Forward(g *Graph, x *Var) *Var {
	return m.Dropout.Forward(g, m.Proj.Forward(g, g.GELU(m.FC.Forward(g, x))))
}

// SetTraining turns the dropout on (training) or off (a TrainingSetter, so
// that nn.Train and nn.Eval reach it).
func (m *MLP) SetTraining(on bool) { m.Dropout.Training = on }

// Parameters returns c_fc's and c_proj's parameters.
func (m *MLP) Parameters() []*Param { return append(m.FC.Parameters(), m.Proj.Parameters()...) }

// Block is a pre-LayerNorm transformer block:
//
//	x = x + attn(ln_1(x))
//	x = x + mlp(ln_2(x))
type Block struct {
	LN1  *LayerNorm
	Attn *CausalSelfAttention
	LN2  *LayerNorm
	MLP  *MLP
}

// NewBlock returns a block of o's sizes, its layers named name+".ln_1",
// ".attn", ".ln_2" and ".mlp" (nanoGPT's names, so that name "h.0" gives
// "h.0.attn.c_attn.weight"), drawn from rng.
func NewBlock(d *vk.Device, name string, o BlockOptions, rng *rand.Rand) *Block {
	o = o.withDefaults("NewBlock", name)
	if rng == nil {
		panic(&tensor.UsageError{Op: "NewBlock", Msg: fmt.Sprintf("layer %q: nil rng", name)})
	}
	return &Block{
		LN1:  newLayerNorm(d, name+".ln_1", o.Dim, o.Bias),
		Attn: NewCausalSelfAttention(d, name+".attn", o, rng),
		LN2:  newLayerNorm(d, name+".ln_2", o.Dim, o.Bias),
		MLP:  NewMLP(d, name+".mlp", o, rng),
	}
}

// Forward applies the block to x, [batch*seq, C] in batch-major rows.
func (b *Block) Forward(g *Graph, x *Var, batch int) *Var {
	x = g.Add(x, b.Attn.Forward(g, b.LN1.Forward(g, x), batch))
	return g.Add(x, b.MLP.Forward(g, b.LN2.Forward(g, x)))
}

// Parameters returns the block's parameters: ln_1, attention, ln_2, MLP.
func (b *Block) Parameters() []*Param {
	ps := b.LN1.Parameters()
	ps = append(ps, b.Attn.Parameters()...)
	ps = append(ps, b.LN2.Parameters()...)
	return append(ps, b.MLP.Parameters()...)
}

// SetTraining turns the block's dropouts on (training) or off
// (evaluation), as PyTorch's module.train() and eval().
func (b *Block) SetTraining(on bool) {
	b.Attn.SetTraining(on)
	b.MLP.SetTraining(on)
}
