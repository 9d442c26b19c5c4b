package nn

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/vkamp/vkamp/amp"
	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Graph records the ops of one forward pass so that Backward can run them in
// reverse. It owns every tensor it makes; Release frees them all, so a
// training loop that makes one Graph per step keeps device memory flat. A
// Graph carries its own autocast region: no state is global, and two
// goroutines can train two models at once, each with its own Graph.
//
// A Graph belongs to one goroutine. Its methods panic with a
// *tensor.UsageError naming the method when the graph was released, or
// when they find another call of the same graph under way (see use).
type Graph struct {
	dev      *vk.Device
	amp      *amp.Region
	noGrad   bool
	nodes    []*node
	slabbed  []*Var          // vars given slabs in this Backward (slabs.go)
	nodeBuf  [16]*node       // nodes' first storage: a small step's graph grows no slice
	params   map[*Param]*Var // the var of each parameter used, once pvars is full
	pvars    []*Var          // the vars of the first parameters used, searched in order
	pvarBuf  [8]*Var         // pvars' storage: a small model's step makes no map
	vars     []Var           // storage newVar hands out, a chunk at a time
	nodeMem  []node          // storage newNode hands out, a chunk at a time
	temps    tensor.Scope
	drops    uint32 // dropout masks made, for distinct seeds per op
	seeds    *SeedSource
	seed     uint32                 // drawn from seeds at the first Dropout
	devSeed  *tensor.Tensor         // Options.DeviceSeed
	seedCopy *tensor.Tensor         // devSeed as the first Dropout found it, read by every mask
	busy     atomic.Bool            // a method of the graph is running
	mark     int                    // tensors the graph held when the running method began
	lastOut  *tensor.Tensor         // the output the last op recorded
	masks    map[int]*tensor.Tensor // causal masks by length, one upload per graph
	released bool
	retain   bool         // Options.RetainGraph
	backward bool         // a Backward has run
	ready    func(*Param) // Options.GradReady
}

// Var is a value in a Graph: a tensor, and how to reach its gradient.
type Var struct {
	g         *Graph
	t         *tensor.Tensor
	param     *Param
	needsGrad bool
	grad      *tensor.Tensor // accumulated during Backward
	slabs     []slab         // Narrow's gradients not yet in grad (slabs.go)
}

// Value returns the var's tensor. It belongs to the graph (or, for a
// parameter, to the parameter).
func (v *Var) Value() *tensor.Tensor { return v.t }

// Grad returns the gradient the last Backward of v's graph computed for v:
// for a var of RequiresGrad (summed over Backward calls, as PyTorch's
// .grad, with Options.RetainGraph) or an intermediate var of the graph
// (PyTorch's retain_grad, for the last call), and the parameter's Grad for
// a parameter's var. It is nil where Backward reached no gradient. The
// graph owns it.
func (v *Var) Grad() *tensor.Tensor {
	if v.param != nil {
		return v.param.Grad
	}
	return v.grad
}

// DType returns the dtype of the var's tensor.
func (v *Var) DType() tensor.DType { return v.t.DType() }

// Shape returns the shape of the var's tensor.
func (v *Var) Shape() []int { return v.t.Shape() }

// node is one recorded op: its inputs, output and what its backward rule
// needs.
type node struct {
	op     tensor.Op
	inputs []*Var
	out    *Var
	saved  []*tensor.Tensor
	attr   attrs
	in     [3]*Var // inputs' storage up to three (Linear's)
}

// graphChunk is how many vars or nodes a graph allocates at once: one Go
// allocation serves a small step's ops.
const graphChunk = 16

// newVar returns a var of g for t, from g's chunked storage.
func (g *Graph) newVar(t *tensor.Tensor) *Var {
	if len(g.vars) == cap(g.vars) {
		g.vars = make([]Var, 0, graphChunk)
	}
	g.vars = g.vars[:len(g.vars)+1]
	v := &g.vars[len(g.vars)-1]
	v.g, v.t = g, t
	return v
}

// newNode copies inputs into the node (up to three into its own array), so
// that the callers' argument lists need not live on the heap. The node
// comes from g's chunked storage.
func (g *Graph) newNode(op tensor.Op, inputs []*Var, out *Var, saved []*tensor.Tensor, a attrs) *node {
	if len(g.nodeMem) == cap(g.nodeMem) {
		g.nodeMem = make([]node, 0, graphChunk)
	}
	g.nodeMem = append(g.nodeMem, node{op: op, out: out, saved: saved, attr: a})
	n := &g.nodeMem[len(g.nodeMem)-1]
	if len(inputs) <= len(n.in) {
		n.inputs = n.in[:len(inputs):len(inputs)]
		copy(n.inputs, inputs)
	} else {
		n.inputs = slices.Clone(inputs)
	}
	return n
}

// attrs are the scalar arguments an op's backward rule may need.
type attrs struct {
	transA, transB bool
	f              float32
	n              int
	seed           uint32
	seedT          *tensor.Tensor // Dropout's seed on the device (Options.DeviceSeed): seed is then the op's k
	tanh           bool           // GELU's tanh form
	axes           []int          // reduced axes, as given (nil: all)
	keepdim        bool
	ints           []int      // layout ops: a permutation, or an axis and the sizes along it
	conv           *convAttrs // conv2d, the poolings and reshape (nn/conv.go)
	fn             *Function  // a custom op (nn/function.go)
	heads          int        // attention's heads (n is its batch, f its scale)
	reverse        bool       // cumsum summing from the end of its axis (n): its gradient's direction
}

// Options configure a Graph.
type Options struct {
	// Autocast turns autocast on in a lower-precision dtype, as
	// torch.autocast(dtype=...) does: the ops of the lists in amp run in
	// tensor.Float16 or tensor.BFloat16 (bf16 has fp32's range, so it trains
	// without a loss scaler, as PyTorch's torch.autocast(dtype=
	// torch.bfloat16) does; a scaler still works with it). The zero value,
	// Float32, leaves it off. AutocastTo makes it from PyTorch's (enabled,
	// dtype) pair.
	Autocast tensor.DType
	// NoGrad records nothing for backward, as torch.no_grad, and each op
	// releases what it made besides its output (saved state, temporaries,
	// input casts) as it returns: an inference pass holds its ops' outputs
	// only.
	NoGrad bool
	// Seeds is where the graph draws its dropout seed, once, at its first
	// Dropout: a step's masks depend on the draw and on the op order. Nil
	// draws from DefaultSeeds, so that graph after graph gets new masks;
	// nn.NewSeedSource(runSeed) gives a run its own reproducible sequence.
	Seeds *SeedSource
	// DeviceSeed, when set, is a one-element tensor.Int32 on the graph's
	// device that holds the graph's dropout seed, in place of a draw from
	// Seeds: the caller writes each step's seed into it before the step
	// (Seeds.NextTo gives the masks a draw would). The graph's first
	// Dropout records a copy of it that every mask of the graph, forward and
	// backward, reads, so a later write changes only later graphs. A step
	// under a tensor.Replayer then replays with the seed written before
	// each replay; a drawn seed is a push constant that differs each step,
	// so such a step is recorded every time (never replayed with an old
	// seed's masks), and a direct vk capture of it fails with an error
	// wrapping vk.ErrCapturing. Dropout panics unless DeviceSeed is one
	// Int32 element.
	DeviceSeed *tensor.Tensor
	// RetainGraph lets Backward run more than once on the graph, as
	// PyTorch's backward(retain_graph=True): each run adds its gradients
	// into the parameters' Grad again. Without it a second Backward
	// panics, since it would add the same gradients twice.
	RetainGraph bool
	// GradReady, when set, is called by Backward (Var.Backward,
	// BackwardFrom and ScaledLoss.Backward go through it) with each
	// parameter as soon as its gradient is final for that pass: every
	// recorded op that uses it, however many (a tied weight has two), has
	// been walked. The work that computes the gradient is recorded, not
	// done, when it is called. It runs on Backward's goroutine, during
	// Backward, and must not call the graph's methods; it may record
	// tensor ops. Frozen parameters and those no recorded op uses get no
	// call. It is PyTorch's register_post_accumulate_grad_hook, as DDP's
	// buckets use it (package dist's DataParallel.GradReady).
	GradReady func(p *Param)
}

// AutocastTo is Options.Autocast from PyTorch's pair: dt where enabled,
// else Float32 (off), as torch.autocast(dtype=dt, enabled=enabled).
func AutocastTo(enabled bool, dt tensor.DType) tensor.DType {
	if enabled {
		return dt
	}
	return tensor.Float32
}

// NewGraph starts recording on d. An Autocast dtype other than Float32,
// Float16 or BFloat16 panics with a *tensor.DTypeError.
func NewGraph(d *vk.Device, o Options) *Graph {
	on, dt := o.Autocast != tensor.Float32, o.Autocast
	if !on {
		dt = tensor.Float16 // what a nested WithAutocast(true, ...) region runs in
	}
	g := &Graph{dev: d, amp: amp.New(on, dt), noGrad: o.NoGrad, seeds: o.Seeds, devSeed: o.DeviceSeed, retain: o.RetainGraph, ready: o.GradReady}
	g.nodes = g.nodeBuf[:0]
	return g
}

// claim marks g busy for the method op until done, and panics if another
// call of g is under way: the graph's state (its nodes, its tensors, its
// autocast region) is not locked, and two goroutines recording into one
// graph would interleave their ops and give wrong gradients. It costs one
// atomic compare-and-swap, and catches the calls that overlap in time,
// which is what two goroutines using one graph soon do. Calls ordered by
// the caller (a graph handed from one goroutine to another) never overlap,
// and are correct.
func (g *Graph) claim(op string) *Graph {
	if !g.busy.CompareAndSwap(false, true) {
		panic(&tensor.UsageError{Op: op, Msg: "another call is using the graph at the same time: a Graph belongs to one goroutine (make one Graph per goroutine)"})
	}
	return g
}

// use is claim for the methods that record or compute: it also panics if g
// was released. Each of them starts with
//
//	defer g.use("Name").done()
func (g *Graph) use(op string) *Graph {
	g.claim(op)
	if g.released {
		g.done()
		panic(&tensor.UsageError{Op: op, Msg: "the graph was released (make a new Graph for each step)"})
	}
	g.mark = g.temps.Len()
	return g
}

// done ends the call that claim or use began. Without gradients, what the
// op made besides its output (its saved state for a backward pass that
// will not come, its temporaries, its inputs' casts) is released at once:
// the device keeps each until the work that reads it has run.
func (g *Graph) done() {
	if g.noGrad && !g.released {
		g.temps.ReleaseFrom(g.mark, g.lastOut)
		g.mark = g.temps.Len()
	}
	g.busy.Store(false)
}

// Autocast returns the graph's autocast region.
func (g *Graph) Autocast() *amp.Region {
	defer g.use("Autocast").done()
	return g.amp
}

// WithAutocast runs f in a nested autocast region (on or off), as a nested
// torch.autocast block, and restores the enclosing one after. The region
// keeps the enclosing region's dtype.
func (g *Graph) WithAutocast(enabled bool, f func()) {
	g.withAutocast("WithAutocast", enabled, g.amp.DType(), f)
}

// WithAutocastDType is WithAutocast with the region's dtype, Float16 or
// BFloat16, as torch.autocast(dtype=...); a weight is cast once per dtype.
func (g *Graph) WithAutocastDType(enabled bool, dt tensor.DType, f func()) {
	g.withAutocast("WithAutocastDType", enabled, dt, f)
}

func (g *Graph) withAutocast(op string, enabled bool, dt tensor.DType, f func()) {
	g.use(op)
	if dt != tensor.Float16 && dt != tensor.BFloat16 {
		g.done()
		panic(&tensor.DTypeError{Op: op, Got: dt, Want: "float16 or bfloat16"})
	}
	g.amp = g.amp.Enter(enabled, dt)
	g.done()
	defer func() {
		defer g.claim(op).done()
		if !g.released { // Release in f exited every region
			g.amp = g.amp.Exit()
		}
	}()
	f()
}

// WithNoGrad runs f with gradient recording off, as a torch.no_grad() block
// inside a step: the ops of f record nothing for backward and their results
// need no gradient (so nothing flows back through them); autocast still
// applies. A graph made with Options.NoGrad is no-grad throughout.
func (g *Graph) WithNoGrad(f func()) {
	g.use("WithNoGrad")
	was := g.noGrad
	g.noGrad = true
	g.done()
	defer func() {
		defer g.claim("WithNoGrad").done()
		g.noGrad = was
	}()
	f()
}

// Release frees every tensor the graph made, and the weight casts of its
// autocast region. Vars of the graph must not be used after, and every
// other method of the graph panics. Release is idempotent.
func (g *Graph) Release() {
	defer g.claim("Release").done()
	g.released = true
	for g.amp != nil {
		g.amp = g.amp.Exit()
	}
	g.temps.Release()
	if g.seedCopy != nil {
		g.seedCopy.Release()
		g.seedCopy = nil
	}
	g.nodes, g.nodeBuf, g.nodeMem = nil, [16]*node{}, nil
}

// Input returns a var for data that needs no gradient, such as a batch.
// The graph does not take ownership of t.
func (g *Graph) Input(t *tensor.Tensor) *Var {
	defer g.use("Input").done()
	if t == nil {
		panic(&tensor.UsageError{Op: "Input", Msg: "nil tensor"})
	}
	if t.Device() != g.dev {
		panic(&tensor.UsageError{Op: "Input", Msg: "tensor on another device than the graph"})
	}
	return g.newVar(t)
}

// RequiresGrad returns a var for data whose gradient Backward computes, as
// a tensor with requires_grad=True in PyTorch (an input whose gradient an
// adversarial example or a saliency map needs); Var.Grad reads it after
// Backward. The graph does not take ownership of t.
func (g *Graph) RequiresGrad(t *tensor.Tensor) *Var {
	v := g.Input(t)
	if g.noGrad {
		return v
	}
	if dt := t.DType(); dt != tensor.Float32 && dt != tensor.Float16 && dt != tensor.BFloat16 {
		panic(&tensor.DTypeError{Op: "RequiresGrad", Got: t.DType(), Want: "a floating dtype"})
	}
	v.needsGrad = true
	return v
}

// Param returns a var for a parameter: its gradient accumulates into p.Grad.
func (g *Graph) Param(p *Param) *Var {
	defer g.use("Param").done()
	if g.noGrad { // a var that needs no gradient, kept out of the memo
		v := g.newVar(p.Value)
		v.param = p
		return v
	}
	// One var per parameter, as PyTorch has one tensor: Grad with respect
	// to it sums every use.
	if v := g.paramVar(p); v != nil && v.t == p.Value {
		return v
	}
	if !p.Frozen && p.Grad == nil {
		panic(&tensor.UsageError{Op: "Graph.Param", Msg: fmt.Sprintf("parameter %s is not frozen but has no Grad (To converts a model for inference and releases the gradients)", p.Name)})
	}
	if !p.Frozen && !slices.Equal(p.Value.Shape(), p.Grad.Shape()) {
		// Backward would fail deep inside, naming no parameter.
		panic(&tensor.UsageError{Op: "Graph.Param", Msg: fmt.Sprintf("parameter %s: Value has shape %v but Grad %v (a Value replaced by another shape: Param.Set keeps it)",
			p.Name, p.Value.Shape(), p.Grad.Shape())})
	}
	v := g.newVar(p.Value)
	v.param, v.needsGrad = p, !p.Frozen
	g.setParamVar(p, v)
	return v
}

// paramVar is the var Param last made for p, or nil: the first parameters
// are searched in a short list, the others in a map.
func (g *Graph) paramVar(p *Param) *Var {
	for _, v := range g.pvars {
		if v.param == p {
			return v
		}
	}
	return g.params[p]
}

// setParamVar makes v the var of p for paramVar.
func (g *Graph) setParamVar(p *Param, v *Var) {
	for i, w := range g.pvars {
		if w.param == p {
			g.pvars[i] = v
			return
		}
	}
	if g.pvars == nil {
		g.pvars = g.pvarBuf[:0]
	}
	if len(g.pvars) < cap(g.pvars) {
		g.pvars = append(g.pvars, v)
		return
	}
	if g.params == nil {
		g.params = map[*Param]*Var{}
	}
	g.params[p] = v
}

// keep tracks a tensor the graph made.
func (g *Graph) keep(t *tensor.Tensor) *tensor.Tensor { return g.temps.Track(t) }

// record makes the output var of an op and, when a gradient is needed,
// records the node for Backward.
func (g *Graph) record(op tensor.Op, out *tensor.Tensor, a attrs, saved []*tensor.Tensor, inputs ...*Var) *Var {
	g.keep(out)
	g.lastOut = out
	v := g.newVar(out)
	if g.noGrad {
		return v
	}
	for _, in := range inputs {
		if in.g != g {
			panic(&tensor.UsageError{Op: op.String(), Msg: "var from another graph"})
		}
		v.needsGrad = v.needsGrad || in.needsGrad
	}
	if v.needsGrad {
		if _, ok := rules[op]; !ok {
			panic(&tensor.UsageError{Op: op.String(), Msg: "no backward rule"})
		}
		g.nodes = append(g.nodes, g.newNode(op, inputs, v, saved, a))
	}
	return v
}

// cast returns v in dtype dt, recording a cast (whose gradient is the cast
// back). A parameter's cast to fp16 comes from the region's cache.
func (g *Graph) cast(v *Var, dt tensor.DType) *Var {
	if v.DType() == dt {
		return v
	}
	var t *tensor.Tensor
	owned := false
	if p := v.param; p != nil && g.amp != nil && dt == g.amp.DType() && v.t == p.Value && v.t.DType() == tensor.Float32 {
		t = p.halfFor(dt) // an Adam's fresh copy, which the autocast cache would cast to the same bits
	}
	if t == nil {
		t, owned = g.amp.Cast(v.t, dt, v.param != nil)
	}
	if !owned {
		// Cached: the region owns it; wrap it without tracking.
		out := g.newVar(t)
		if !g.noGrad && v.needsGrad {
			out.needsGrad = true
			g.nodes = append(g.nodes, g.newNode(tensor.OpCast, []*Var{v}, out, nil, attrs{}))
		}
		return out
	}
	return g.record(tensor.OpCast, t, attrs{}, nil, v)
}

// Cast returns v converted to dt; its gradient is converted back.
func (g *Graph) Cast(v *Var, dt tensor.DType) *Var {
	defer g.use("Cast").done()
	return g.cast(v, dt)
}

// Backward computes the gradient of loss, a one-element var, with respect to
// every parameter it depends on, accumulating into the parameters' Grad.
// seed is the gradient of the loss itself: nil means 1; a loss scaler's
// Seed gives the gradients of the scaled loss. The graph takes ownership of
// seed. Backward records work and returns without waiting. It panics if the
// loss is nil or a var of another graph, and when called a second time on
// a graph made without Options.RetainGraph.
func (g *Graph) Backward(loss *Var, seed *tensor.Tensor) error {
	defer g.use("Backward").done()
	if loss == nil {
		panic(&tensor.UsageError{Op: "Backward", Msg: "nil loss"})
	}
	if loss.g != g {
		panic(&tensor.UsageError{Op: "Backward", Msg: "the loss is a var of another graph"})
	}
	if g.backward && !g.retain {
		panic(&tensor.UsageError{Op: "Backward", Msg: "called twice on one graph, which would add the same gradients again (set Options.RetainGraph to allow it)"})
	}
	if loss.t.Len() != 1 {
		panic(&tensor.ShapeError{Op: "Backward", A: loss.Shape(), B: []int{1}, Msg: "the loss must have one element"})
	}
	if !loss.needsGrad {
		return fmt.Errorf("nn: backward: the loss depends on no parameter (or the graph is NoGrad)")
	}
	if seed == nil {
		seed = tensor.Full(g.dev, loss.DType(), 1, loss.Shape()...)
	}
	g.keep(seed)
	if seed.Len() != 1 {
		panic(&tensor.ShapeError{Op: "Backward", A: seed.Shape(), B: []int{1}, Msg: "the seed must have one element"})
	}
	if seed.DType() != loss.DType() {
		seed = g.keep(tensor.Cast(seed, loss.DType()))
	}
	g.backward = true
	// Running sums of an earlier Backward of this graph (RetainGraph) must
	// not leak into this one: only the parameters' gradients accumulate
	// across calls.
	for _, n := range g.nodes {
		n.out.grad, n.out.slabs = nil, nil
	}
	g.slabbed = g.slabbed[:0]
	loss.grad = seed
	uses := g.paramUses()
	for i := len(g.nodes) - 1; i >= 0; i-- {
		n := g.nodes[i]
		if err := g.settle(n.out); err != nil {
			return err
		}
		if dy := n.out.grad; dy != nil { // else nothing downstream needed this output
			if n.op == tensor.OpNarrow && n.inputs[0].param == nil && n.inputs[0].needsGrad {
				g.addSlab(n, dy)
				g.walked(n, uses)
				continue
			}
			if p := castParam(n, dy); p != nil {
				// Accumulate widens dy as it adds it, exactly as the cast
				// back would: AMP's fp16 weight gradients skip a kernel
				// and a full-size fp32 copy each.
				if err := p.accumulate(dy); err != nil {
					return err
				}
				g.walked(n, uses)
				continue
			}
			grads := rules[n.op](g, n, dy)
			g.checkGrads(n, grads)
			for j, in := range n.inputs {
				if grads[j] == nil || !in.needsGrad {
					continue
				}
				if err := g.accumulate(in, grads[j]); err != nil {
					return err
				}
			}
		}
		g.walked(n, uses)
	}
	for _, v := range g.slabbed { // the leaves (RequiresGrad) among them
		if err := g.settle(v); err != nil {
			return err
		}
	}
	return nil
}

// castParam returns the parameter that n casts down, when dy, n's
// gradient, widens exactly to the parameter's Float32: its cast back can
// be left to Accumulate. Else nil.
func castParam(n *node, dy *tensor.Tensor) *Param {
	if n.op != tensor.OpCast || len(n.inputs) != 1 {
		return nil
	}
	in := n.inputs[0]
	if in.param == nil || !in.needsGrad || in.DType() != tensor.Float32 {
		return nil
	}
	if dt := dy.DType(); dt != tensor.Float16 && dt != tensor.BFloat16 {
		return nil
	}
	return in.param
}

// paramUses counts, for Options.GradReady, the inputs of recorded nodes
// that are each trainable parameter: Backward walks them all before the
// parameter's gradient is final. Counted by parameter, not var: a
// parameter whose Value was replaced has two vars. Nil without a hook.
func (g *Graph) paramUses() map[*Param]int {
	if g.ready == nil {
		return nil
	}
	uses := map[*Param]int{}
	for _, n := range g.nodes {
		for _, in := range n.inputs {
			if in.param != nil && in.needsGrad {
				uses[in.param]++
			}
		}
	}
	return uses
}

// walked counts n's parameter inputs off uses, and calls the GradReady
// hook for each parameter that n was the last use of.
func (g *Graph) walked(n *node, uses map[*Param]int) {
	if uses == nil {
		return
	}
	for _, in := range n.inputs {
		if in.param == nil || !in.needsGrad {
			continue
		}
		if uses[in.param]--; uses[in.param] == 0 {
			g.ready(in.param)
		}
	}
}

// checkGrads enforces each rule's contract: one gradient per input (nil
// only where the input needs none), each of its input's shape and dtype.
func (g *Graph) checkGrads(n *node, grads []*tensor.Tensor) {
	if len(grads) != len(n.inputs) {
		panic(&tensor.UsageError{Op: n.name(), Msg: fmt.Sprintf("backward rule gave %d gradients for %d inputs", len(grads), len(n.inputs))})
	}
	for i, gr := range grads {
		in := n.inputs[i]
		if gr == nil {
			if in.needsGrad {
				panic(&tensor.UsageError{Op: n.name(), Msg: fmt.Sprintf("backward rule gave no gradient for input %d, which needs one", i)})
			}
			continue
		}
		g.keep(gr)
		if !tensor.SameShape(gr, in.t) {
			panic(&tensor.ShapeError{Op: n.name() + " backward", A: gr.Shape(), B: in.Shape(), Msg: fmt.Sprintf("gradient %d has the wrong shape", i)})
		}
		if gr.DType() != in.DType() {
			panic(&tensor.DTypeError{Op: n.name() + " backward", Got: gr.DType(), Want: in.DType().String()})
		}
	}
}

// accumulate adds a gradient into a var: into the parameter's Grad for a
// parameter, else into the var's running sum.
func (g *Graph) accumulate(v *Var, gr *tensor.Tensor) error {
	if v.param != nil {
		return v.param.accumulate(gr)
	}
	if v.grad == nil {
		v.grad = gr
		return nil
	}
	v.grad = g.keep(tensor.Add(v.grad, gr, v.DType()))
	return nil
}
