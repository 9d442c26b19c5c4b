package nn

import (
	"github.com/vkamp/vkamp/checkpoint"
	"github.com/vkamp/vkamp/tensor"
)

// Moments returns an optimizer's state buffers, for tests: per parameter, the
// first moment (SGD's momentum buffer) and Adam's second moment, nil where
// unused.
func Moments(opt Stateful) (m1, m2 []*tensor.Tensor) {
	o := opt.optimizerBase()
	return o.moments(0), o.moments(1)
}

// StateTensors returns an optimizer's state as a checkpoint names it.
func StateTensors(opt Stateful) []checkpoint.Named { return opt.stateTensors() }

// ComposedAttention is attention from graph ops with dropout p on the
// probabilities (p == 0: none), for comparing with the fused op.
func ComposedAttention(g *Graph, qkv *Var, batch, heads int, p float32) *Var {
	return g.composedAttention(qkv, batch, heads, p)
}
