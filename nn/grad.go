package nn

import (
	"fmt"
	"slices"

	"github.com/vkamp/vkamp/tensor"
)

// Grad returns the gradients of output, a one-element var, with respect to
// inputs (parameters' vars, inputs' vars or intermediate vars of the graph),
// as torch.autograd.grad(output, inputs, grad_outputs=seed,
// create_graph=createGraph). The parameters' Grad fields are not touched,
// and Grad can run any number of times on a graph (before or after its
// Backward).
//
// seed is the gradient of the output: nil means 1; a loss scaler's Seed
// gives the gradients of the scaled loss. The graph takes ownership of it.
//
// Without createGraph the gradients are plain values: vars with no history.
// With createGraph they are computed by graph ops, recorded in this graph,
// so they are differentiable in turn: a loss made of them (a gradient
// penalty) trains through Backward, which then adds second derivatives into
// the parameters' Grad. Every op whose backward is made of differentiable
// ops has such a rule (doubleRules); Grad with createGraph panics with a
// *tensor.UsageError naming an op on the path that has none.
//
// An input the output does not depend on is an error, as in PyTorch
// without allow_unused. Grad records work and returns without waiting.
func (g *Graph) Grad(output *Var, seed *tensor.Tensor, inputs []*Var, createGraph bool) ([]*Var, error) {
	seed, n0, err := g.startGrad(output, seed, inputs)
	if err != nil {
		return nil, err
	}
	var grads map[*Var]*Var
	if createGraph {
		// The double rules record through the graph's own methods, which
		// claim the graph themselves: Grad does not hold it meanwhile.
		grads = g.varBackward(output, seed, n0)
	} else {
		g.use("Grad")
		grads = g.valueBackward(output, seed, n0)
		g.done()
	}
	out := make([]*Var, len(inputs))
	for i, in := range inputs {
		if out[i] = grads[in]; out[i] == nil {
			return nil, fmt.Errorf("nn: grad: input %d (%s%v) is not used in computing the output", i, in.DType(), in.Shape())
		}
	}
	return out, nil
}

// startGrad checks Grad's arguments and returns the seed in the output's
// dtype and the number of nodes to walk back through.
func (g *Graph) startGrad(output *Var, seed *tensor.Tensor, inputs []*Var) (*tensor.Tensor, int, error) {
	defer g.use("Grad").done()
	if output == nil {
		panic(&tensor.UsageError{Op: "Grad", Msg: "nil output"})
	}
	if output.g != g {
		panic(&tensor.UsageError{Op: "Grad", Msg: "the output is a var of another graph"})
	}
	for i, in := range inputs {
		if in == nil || in.g != g {
			panic(&tensor.UsageError{Op: "Grad", Msg: fmt.Sprintf("input %d is nil or a var of another graph", i)})
		}
	}
	if output.t.Len() != 1 {
		panic(&tensor.ShapeError{Op: "Grad", A: output.Shape(), B: []int{1}, Msg: "the output must have one element"})
	}
	if !output.needsGrad {
		return nil, 0, fmt.Errorf("nn: grad: the output depends on nothing that needs a gradient (or the graph is NoGrad)")
	}
	if seed == nil {
		seed = tensor.Full(g.dev, output.DType(), 1, output.Shape()...)
	}
	g.keep(seed)
	if seed.Len() != 1 {
		panic(&tensor.ShapeError{Op: "Grad", A: seed.Shape(), B: []int{1}, Msg: "the seed must have one element"})
	}
	if seed.DType() != output.DType() {
		seed = g.keep(tensor.Cast(seed, output.DType()))
	}
	return seed, len(g.nodes), nil
}

// valueBackward runs the backward rules from output down through the first
// n0 nodes into a map of gradients, leaving the parameters' Grad alone.
func (g *Graph) valueBackward(output *Var, seed *tensor.Tensor, n0 int) map[*Var]*Var {
	sums := map[*Var]*tensor.Tensor{output: seed}
	for i := n0 - 1; i >= 0; i-- {
		n := g.nodes[i]
		dy := sums[n.out]
		if dy == nil {
			continue
		}
		grads := rules[n.op](g, n, dy)
		g.checkGrads(n, grads)
		for j, in := range n.inputs {
			if grads[j] == nil || !in.needsGrad {
				continue
			}
			if s := sums[in]; s != nil {
				sums[in] = g.keep(tensor.Add(s, grads[j], in.DType()))
			} else {
				sums[in] = grads[j]
			}
		}
	}
	out := make(map[*Var]*Var, len(sums))
	for v, t := range sums {
		out[v] = g.newVar(t)
	}
	return out
}

// varBackward is valueBackward with the double rules: every gradient is a
// var recorded in the graph.
func (g *Graph) varBackward(output *Var, seed *tensor.Tensor, n0 int) map[*Var]*Var {
	sums := map[*Var]*Var{output: g.Input(seed)}
	for i := n0 - 1; i >= 0; i-- {
		n := g.nodes[i]
		dy := sums[n.out]
		if dy == nil {
			continue
		}
		rule, ok := doubleRules[n.op]
		if !ok {
			panic(&tensor.UsageError{Op: "Grad", Msg: fmt.Sprintf("%s has no differentiable backward rule (createGraph)", n.op)})
		}
		grads := rule(g, n, dy)
		for j, in := range n.inputs {
			gr := grads[j]
			if gr == nil || !in.needsGrad {
				continue
			}
			gr = g.Cast(gr, in.DType())
			if !slices.Equal(gr.Shape(), in.Shape()) {
				panic(&tensor.ShapeError{Op: n.op.String() + " double backward", A: gr.Shape(), B: in.Shape(), Msg: fmt.Sprintf("gradient %d has the wrong shape", j)})
			}
			if s := sums[in]; s != nil {
				sums[in] = g.Add(s, gr)
			} else {
				sums[in] = gr
			}
		}
	}
	return sums
}
