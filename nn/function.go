package nn

import (
	"fmt"
	"slices"

	"github.com/vkamp/vkamp/amp"
	"github.com/vkamp/vkamp/tensor"
)

// Function is an op defined outside package nn, with its forward and its
// backward, as PyTorch's torch.autograd.Function with custom_fwd and
// custom_bwd. Graph.Apply records it as a node of op tensor.OpCustom, whose
// backward rule calls Backward: the engine checks what Backward returns as
// it checks a built-in rule's gradients (one per input, nil only for an
// input that needs none, each of its input's shape and dtype), and panics
// with an error naming the function.
//
// Forward and Backward compute with package tensor's functions: they run
// outside autocast and choose their dtypes themselves (CastInputs chooses
// the dtypes of the inputs), so custom_bwd's rule, backward in the
// forward's autocast state, holds by construction. They must not call the
// graph's methods: they run inside Apply and Backward, and the graph
// panics on a call that overlaps another. Backward's tensor ops are not
// recorded: a Function is differentiable once, as PyTorch's with
// @once_differentiable.
//
// Ownership: the graph owns the output and the saved tensors that Forward
// returns, and the gradients that Backward returns, and releases them with
// itself (Graph.Release). They must be new tensors, an input's tensor, a
// saved tensor or dy: never a tensor owned elsewhere, such as a parameter's
// value reached by a closure. A temporary that neither returns must be
// released by the function (defer t.Release() is safe: work recorded that
// reads it still runs).
type Function struct {
	// Name names the function in errors and panics.
	Name string
	// Forward computes the output from the inputs' tensors, and returns
	// the tensors that Backward needs (ctx.save_for_backward); saving an
	// input's tensor, or the output, is fine.
	Forward func(in []*tensor.Tensor) (out *tensor.Tensor, saved []*tensor.Tensor)
	// ForwardAutocast, set in place of Forward, is Forward told the
	// autocast state it runs under, as custom_fwd without cast_inputs runs
	// the forward under the surrounding autocast: ac.DType(op, inputs...)
	// is the dtype autocast runs a built-in op in (a matmul in fp16 in an
	// fp16 region), so the function's ops take it as PyTorch's are
	// autocast. With CastInputs set, autocast is off inside, as
	// cast_inputs turns it off: ac says so.
	ForwardAutocast func(ac Autocast, in []*tensor.Tensor) (out *tensor.Tensor, saved []*tensor.Tensor)
	// Backward returns the gradient of each input from dy, the gradient of
	// the output (in the output's dtype), given the saved tensors and the
	// inputs: one per input, in the input's shape and dtype, nil allowed
	// for an input that needs no gradient (an input's gradient that is not
	// needed is ignored, as PyTorch's). It may be nil when no input needs
	// a gradient.
	Backward func(saved, in []*tensor.Tensor, dy *tensor.Tensor) []*tensor.Tensor
	// CastInputs is custom_fwd(cast_inputs=...): under autocast, amp.FP32
	// casts the floating inputs to float32 (cast_inputs=torch.float32),
	// amp.Lower to the region's dtype, and amp.Widest to the widest of
	// them; the cast is recorded, so gradients flow back in each input's
	// own dtype. The zero value, amp.Keep, passes the inputs as they are,
	// as custom_fwd without cast_inputs; and outside autocast no input is
	// cast, as in PyTorch. amp.PolicyOf(op) gives a built-in op's policy,
	// for a function that should run in the dtype autocast runs op in.
	CastInputs amp.Policy
}

// Apply runs f on the inputs and records it for Backward, as
// MyFunction.apply(*inputs) in PyTorch. It panics with a *tensor.UsageError
// naming f (Op "Apply <Name>") for a nil f, Forward or input, an input of
// another graph, a nil output of Forward, an output on another device, and
// a nil Backward when the output needs a gradient.
func (g *Graph) Apply(f *Function, in ...*Var) *Var {
	defer g.use("Apply").done()
	if f == nil {
		panic(&tensor.UsageError{Op: "Apply", Msg: "nil function"})
	}
	op := "Apply " + f.Name
	if (f.Forward == nil) == (f.ForwardAutocast == nil) {
		panic(&tensor.UsageError{Op: op, Msg: "set one of Forward and ForwardAutocast"})
	}
	needsGrad := false
	for i, v := range in {
		if v == nil {
			panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("input %d is nil", i)})
		}
		if v.g != g {
			panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("input %d is a var of another graph", i)})
		}
		needsGrad = needsGrad || v.needsGrad
	}
	if needsGrad && !g.noGrad && f.Backward == nil {
		panic(&tensor.UsageError{Op: op, Msg: "nil Backward, and an input needs a gradient"})
	}
	in = g.castInputs(op, f.CastInputs, in)
	ts := make([]*tensor.Tensor, len(in))
	for i, v := range in {
		ts[i] = v.t
	}
	var out *tensor.Tensor
	var saved []*tensor.Tensor
	if f.ForwardAutocast != nil {
		ac := Autocast{}
		if f.CastInputs == amp.Keep {
			ac.r = g.amp
		}
		out, saved = f.ForwardAutocast(ac, slices.Clone(ts))
	} else {
		out, saved = f.Forward(slices.Clone(ts))
	}
	if out == nil {
		panic(&tensor.UsageError{Op: op, Msg: "Forward returned a nil output"})
	}
	if out.Device() != g.dev {
		panic(&tensor.UsageError{Op: op, Msg: "Forward returned a tensor on another device than the graph"})
	}
	for _, s := range saved {
		if s != nil && !slices.Contains(ts, s) && s != out {
			g.keep(s) // an input's tensor belongs to its owner
		}
	}
	if slices.Contains(ts, out) {
		// The output is an input's tensor, which its owner releases: the
		// graph keeps a copy, so that releasing one does not free the other.
		out = tensor.Cast(out, out.DType())
	}
	return g.record(tensor.OpCustom, out, attrs{fn: f}, saved, in...)
}

// Autocast is the autocast state a Function's ForwardAutocast runs under.
// Its zero value is autocast off.
type Autocast struct{ r *amp.Region }

// Enabled reports whether autocast is on.
func (a Autocast) Enabled() bool { return a.r.Enabled() }

// DType is the dtype autocast runs op in given its floating inputs (as
// amp's policy table says: the region's dtype for a matmul, fp32 for a
// sum, the widest input's for the others), or their widest dtype with
// autocast off.
func (a Autocast) DType(op tensor.Op, in ...*tensor.Tensor) tensor.DType {
	dts := make([]tensor.DType, len(in))
	for i, t := range in {
		dts[i] = t.DType()
	}
	return a.r.OpDType(op, dts...)
}

// castInputs casts the floating inputs as a function's policy says under
// autocast (recording the casts), and leaves them as they are otherwise.
func (g *Graph) castInputs(op string, p amp.Policy, in []*Var) []*Var {
	if !g.amp.Enabled() || p == amp.Keep {
		return in
	}
	var floats []tensor.DType
	for _, v := range in {
		if v.DType() != tensor.Int32 {
			floats = append(floats, v.DType())
		}
	}
	if len(floats) == 0 {
		return in
	}
	var dt tensor.DType
	switch p {
	case amp.FP32:
		dt = tensor.Float32
	case amp.Lower:
		dt = g.amp.DType()
	case amp.Widest:
		dt = tensor.Widest(floats...)
	default:
		panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("unknown CastInputs policy %d", p)})
	}
	out := slices.Clone(in)
	for i, v := range out {
		if v.DType() != tensor.Int32 {
			out[i] = g.cast(v, dt)
		}
	}
	return out
}

// customBack is OpCustom's rule: the function's own Backward. A gradient
// that is an input's tensor is copied, since the graph releases the
// gradients it is given and the input belongs to its owner.
func customBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	in := make([]*tensor.Tensor, len(n.inputs))
	for i, v := range n.inputs {
		in[i] = v.t
	}
	grads := n.attr.fn.Backward(slices.Clone(n.saved), slices.Clone(in), dy)
	for i, gr := range grads {
		if gr != nil && slices.Contains(in, gr) {
			grads[i] = tensor.Cast(gr, gr.DType())
		}
	}
	return grads
}

// name is the node's op as errors name it: a custom function by its Name.
func (n *node) name() string {
	if n.op == tensor.OpCustom && n.attr.fn != nil {
		return fmt.Sprintf("custom %q", n.attr.fn.Name)
	}
	return n.op.String()
}
