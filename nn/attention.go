package nn

import (
	"math"

	"github.com/vkamp/vkamp/tensor"
)

// CausalSelfAttention is nanoGPT's causal self-attention core, fused: from
// qkv [batch*T, 3C] (or [batch, T, 3C]), the output of c_attn holding
// q | k | v along the last axis, it returns softmax(q k^T / sqrt(hd)) v per
// head under the causal mask, heads merged back into [batch*T, C] (qkv's
// leading shape). It runs in fp16 under autocast, as PyTorch's
// scaled_dot_product_attention, accumulating in fp32
// (tensor.CausalAttention); without autocast in qkv's dtype. The backward
// pass recomputes the probabilities from the saved log-sum-exp and is
// deterministic. It panics as tensor.CausalAttention does.
func (g *Graph) CausalSelfAttention(qkv *Var, batch, heads int) *Var {
	defer g.use("CausalSelfAttention").done()
	qkv = g.cast(qkv, g.dtypeFor(tensor.OpAttention, qkv))
	s := qkv.Shape()
	scale := float32(1)
	if len(s) > 0 && heads > 0 && s[len(s)-1]/(3*heads) > 0 {
		scale = float32(1 / math.Sqrt(float64(s[len(s)-1]/(3*heads))))
	}
	y, lse := tensor.CausalAttention(qkv.t, batch, heads, scale)
	g.keep(lse)
	return g.record(tensor.OpAttention, y, attrs{n: batch, heads: heads, f: scale}, []*tensor.Tensor{lse}, qkv)
}

// The gradient of qkv from the inputs, the output and the saved lse.
func attentionBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	return []*tensor.Tensor{tensor.CausalAttentionBackward(n.inputs[0].t, n.out.t, n.saved[0], dy, n.attr.n, n.attr.heads, n.attr.f)}
}
