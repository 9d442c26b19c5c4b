package nn

// TEMPORARY stand-in for Graph.CausalSelfAttention of branch attn, removed
// when it merges: it returns the v third of qkv (no mixing over positions),
// so that the GPT's other parts and the training tool can be tested.

import (
	"github.com/vkamp/vkamp/tensor"
)

func (g *Graph) CausalSelfAttention(qkv *Var, batch, heads int) *Var {
	c3 := qkv.Shape()[1]
	c := c3 / 3
	sel := make([]float32, c3*c)
	for i := range c {
		sel[(2*c+i)*c+i] = 1
	}
	s := g.keep(tensor.FromFloat32(g.dev, sel, c3, c))
	return g.MatMul(qkv, g.Input(s), false, false)
}
