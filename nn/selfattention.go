package nn

import (
	"fmt"
	"math/rand/v2"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// SelfAttention is multi-head self-attention as a Module: Forward takes x
// [batch, seq, C] alone and returns [batch, seq, C], so it composes in a
// Sequential (torch.nn.MultiheadAttention(C, heads, batch_first=True)
// called as attn(x, x, x), with one fused input projection). Causal lets
// each position see itself and the positions before it; Mask, when set,
// hides more. A causal attention without a mask or attention dropout runs
// the fused kernels; any other runs composed from graph ops.
type SelfAttention struct {
	*CausalSelfAttention // c_attn, c_proj, the heads and the two dropouts
	Causal               bool
	// Mask is Int32, nonzero where a query may not see a key, of any shape
	// that broadcasts to [batch, heads, seq, seq] without growing it:
	// [seq, seq] (PyTorch's boolean attn_mask, True masked), [batch, 1, 1,
	// seq] (key_padding_mask, True for padding), [batch, 1, seq, seq]. A
	// query that sees no key at all gets NaN, as in PyTorch. The caller
	// owns it.
	Mask *tensor.Tensor
}

// NewSelfAttention returns self-attention of o.Dim and o.Heads, causal or
// not, with NewCausalSelfAttention's layers and initialisation.
func NewSelfAttention(d *vk.Device, name string, o BlockOptions, causal bool, rng *rand.Rand) *SelfAttention {
	return &SelfAttention{CausalSelfAttention: NewCausalSelfAttention(d, name, o, rng), Causal: causal}
}

// Forward attends over x, [batch, seq, C]. x of another shape panics with
// a *tensor.ShapeError.
func (a *SelfAttention) Forward(g *Graph, x *Var) *Var {
	s, c := x.Shape(), a.Proj.W.Value.Shape()[0]
	if len(s) != 3 || s[2] != c {
		panic(&tensor.ShapeError{Op: "SelfAttention", A: s, B: []int{-1, -1, c}, Msg: fmt.Sprintf("want x [batch, seq, %d]", c)})
	}
	batch := s[0]
	qkv := a.QKV.Forward(g, x)
	p := float32(0)
	if a.AttnDropout.Training {
		p = a.AttnDropout.P
	}
	var y *Var
	if a.Causal && a.Mask == nil && p == 0 {
		y = g.CausalSelfAttention(g.Reshape(qkv, batch*s[1], 3*c), batch, a.Heads)
		y = g.Reshape(y, s...)
	} else {
		y = g.maskedAttention("SelfAttention", qkv, batch, a.Heads, p, a.Causal, a.Mask)
	}
	return a.Dropout.Forward(g, a.Proj.Forward(g, y))
}
