package nn

import (
	"fmt"
	"math"

	"github.com/vkamp/vkamp/tensor"
)

// CausalSelfAttentionDropout is CausalSelfAttention with dropout p on the
// attention probabilities, nanoGPT's attn_dropout. The fused kernels have
// no dropout, so for p > 0 it is composed as nanoGPT's manual path:
// (q k^T) / sqrt(hd), the causal mask filled with -inf, softmax (fp32 under
// autocast), dropout, then the product with v; each step is a graph op
// with its own backward rule. With p == 0 it is CausalSelfAttention.
func (g *Graph) CausalSelfAttentionDropout(qkv *Var, batch, heads int, p float32) *Var {
	if p == 0 {
		return g.CausalSelfAttention(qkv, batch, heads)
	}
	return g.composedAttention(qkv, batch, heads, p)
}

// composedAttention is attention from graph ops, with dropout p on the
// probabilities (none for p == 0: tests compare it with the fused op).
func (g *Graph) composedAttention(qkv *Var, batch, heads int, p float32) *Var {
	return g.maskedAttention("CausalSelfAttentionDropout", qkv, batch, heads, p, true, nil)
}

// maskedAttention is attention from graph ops over qkv ([batch*T, 3C] or
// [batch, T, 3C]), with dropout p on the probabilities, each query seeing
// the keys at or before it where causal, and none where mask (Int32,
// broadcasting to [batch, heads, T, T]) is nonzero.
func (g *Graph) maskedAttention(op string, qkv *Var, batch, heads int, p float32, causal bool, mask *tensor.Tensor) *Var {
	s := qkv.Shape()
	rows := 1
	for _, n := range s[:max(len(s)-1, 0)] {
		rows *= n
	}
	if len(s) < 2 || len(s) > 3 || heads < 1 || batch < 1 || rows%batch != 0 || s[len(s)-1]%(3*heads) != 0 || rows == 0 {
		panic(&tensor.ShapeError{Op: op, A: s, B: []int{batch, heads},
			Msg: fmt.Sprintf("want qkv [batch*T, 3C] or [batch, T, 3C] with C a multiple of heads (the second shape is [batch, heads]); dropout %g", p)})
	}
	t, c := rows/batch, s[len(s)-1]/3
	hd := c / heads
	x := g.Permute(g.Reshape(qkv, batch, t, 3, heads, hd), 2, 0, 3, 1, 4) // [3, B, H, T, hd]
	part := func(i int) *Var { return g.Reshape(g.Narrow(x, 0, i, 1), batch, heads, t, hd) }
	q, k, v := part(0), part(1), part(2)
	att := g.Scale(g.MatMul(q, k, false, true), float32(1/math.Sqrt(float64(hd)))) // [B, H, T, T]
	if causal {
		att = g.MaskedFill(att, g.causalMask(t), float32(math.Inf(-1)))
	}
	if mask != nil {
		att = g.MaskedFill(att, mask, float32(math.Inf(-1)))
	}
	att = g.Dropout(g.Softmax(att, 3), p)
	y := g.Permute(g.MatMul(att, v, false, false), 0, 2, 1, 3) // [B, T, H, hd]
	out := append(append([]int(nil), s[:len(s)-1]...), c)
	return g.Reshape(y, out...)
}

// causalMask is [t, t] Int32, 1 above the diagonal (a key after the
// query), owned by the graph and made once for all its layers, on the
// device (a captured step uploads nothing).
func (g *Graph) causalMask(t int) *tensor.Tensor {
	if mask, ok := g.masks[t]; ok {
		return mask
	}
	if g.masks == nil {
		g.masks = map[int]*tensor.Tensor{}
	}
	g.masks[t] = g.keep(tensor.CausalMask(g.dev, t))
	return g.masks[t]
}
