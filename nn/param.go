package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Param is a trainable tensor: an fp32 master value and its fp32 gradient,
// which Backward accumulates into and optimizers read. Both live until Close.
// Set copies new weights into Value. An optimizer also follows a Value or
// Grad replaced by another tensor of the same shape, from its next step;
// the replaced tensor is then the caller's to release.
type Param struct {
	Name  string
	Value *tensor.Tensor
	Grad  *tensor.Tensor
	// Frozen is PyTorch's requires_grad = False: a graph made after it is
	// set gives the parameter no gradient (Graph.Param reads it), and the
	// optimizers and gradient clipping leave it out from their next call
	// on. Freeze and Unfreeze set it over a module.
	Frozen bool

	half *halfWeight // the fp16 or bf16 copy an Adam keeps (halfweights.go)
}

// NewParam returns a parameter holding data, with a zero gradient. A shape
// with a dimension below 1, over 2^31 elements or not of len(data)
// elements panics with a *tensor.UsageError naming the parameter. A tensor
// the device cannot hold (out of memory, or over its
// maxStorageBufferRange) is carried as an error: Err returns it, and so do
// the optimizers' constructors.
func NewParam(d *vk.Device, name string, data []float32, shape ...int) *Param {
	if n := checkSizes("NewParam", name, fmt.Sprintf("shape %v", shape), shape...); n != len(data) {
		panic(&tensor.UsageError{Op: "NewParam", Msg: fmt.Sprintf("parameter %q: shape %v holds %d elements, data %d", name, shape, n, len(data))})
	}
	return &Param{Name: name, Value: tensor.FromFloat32(d, data, shape...), Grad: tensor.Zeros(d, tensor.Float32, shape...)}
}

// newUniform returns a parameter of shape initialised uniform in
// [-bound, bound) from rng. When the device cannot hold it, the parameter
// carries the error and nothing is drawn (a tensor over the device's limit
// can be larger than the host would like to fill for nothing).
func newUniform(d *vk.Device, name string, bound float64, rng *rand.Rand, shape ...int) *Param {
	probe := tensor.New(d, tensor.Float32, shape...)
	if probe.Err() != nil {
		return &Param{Name: name, Value: probe, Grad: tensor.Zeros(d, tensor.Float32, shape...)}
	}
	probe.Release()
	v := make([]float32, checkSizes("NewParam", name, fmt.Sprintf("shape %v", shape), shape...))
	for i := range v {
		v[i] = float32((2*rng.Float64() - 1) * bound)
	}
	return NewParam(d, name, v, shape...)
}

// checkSizes panics with a *tensor.UsageError naming the constructor, the
// layer and its sizes (as desc says them) unless every size is at least 1
// and their product fits in 2^31 elements, and returns the product.
func checkSizes(op, name, desc string, sizes ...int) int {
	n := 1
	for _, s := range sizes {
		if s < 1 {
			panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("layer %q: %s: every size must be at least 1", name, desc)})
		}
		if n > math.MaxInt32/s {
			panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("layer %q: %s: more than 2^31 elements", name, desc)})
		}
		n *= s
	}
	return n
}

// Err returns the error the parameter's value or gradient carries (a tensor
// the device could not hold), naming the parameter, without waiting.
func (p *Param) Err() error {
	if err := p.tensorErr(); err != nil {
		return fmt.Errorf("nn: parameter %s: %w", p.Name, err)
	}
	return nil
}

func (p *Param) tensorErr() error {
	if err := p.Value.Err(); err != nil {
		return err
	}
	return p.Grad.Err()
}

// accumulate adds g into the gradient in place.
func (p *Param) accumulate(g *tensor.Tensor) error {
	if err := g.Err(); err != nil {
		return fmt.Errorf("nn: gradient of %s: %w", p.Name, err)
	}
	return tensor.Accumulate(p.Grad, g)
}

// Set copies t into the parameter's value, keeping the value's memory (the
// tensor an optimizer updates): the way to set weights at any time. t must
// have the value's shape, else Set returns a *tensor.ShapeError naming the
// parameter and changes nothing (as PyTorch's copy_ raises); a dtype other
// than Float32 is converted as tensor.Cast converts it. Set returns t's
// error or a failure to record the copy, and never makes the value carry an
// error. A nil t panics.
func (p *Param) Set(t *tensor.Tensor) error {
	if t == nil {
		panic(&tensor.UsageError{Op: "Param.Set", Msg: fmt.Sprintf("parameter %s: nil tensor", p.Name)})
	}
	if !slices.Equal(t.Shape(), p.Value.Shape()) {
		return &tensor.ShapeError{Op: "Param.Set", A: p.Value.Shape(), B: t.Shape(),
			Msg: fmt.Sprintf("parameter %s has the first shape", p.Name)}
	}
	src := t
	if t.DType() != tensor.Float32 {
		src = tensor.Cast(t, tensor.Float32)
		defer src.Release()
	}
	p.staleHalf()
	if err := p.Value.CopyFrom(src); err != nil {
		return fmt.Errorf("nn: set %s: %w", p.Name, err)
	}
	return nil
}

// ZeroGrad sets the gradient to zero, keeping its memory.
func (p *Param) ZeroGrad() error {
	return p.Grad.Zero()
}

// Close releases the value and the gradient.
func (p *Param) Close() error {
	p.Value.Release()
	p.Grad.Release()
	return nil
}

// Module is a layer or a model: a function of a var with parameters.
type Module interface {
	Forward(g *Graph, x *Var) *Var
	Parameters() []*Param
}

// Linear is y = x W^T + b with an fp32 master weight [out, in] and bias
// [out] (B is nil in a Linear without bias, see NewLinearNoBias); under
// autocast it computes in fp16 with fp32 accumulation.
type Linear struct {
	W, B *Param
}

// NewLinear returns a Linear layer initialised as PyTorch's:
// uniform(-1/sqrt(in), 1/sqrt(in)) for weight and bias, from rng. Sizes
// below 1, a weight over 2^31 elements or a nil rng panic with a
// *tensor.UsageError naming the layer. A weight or bias the device cannot
// hold (out of memory, or over its maxStorageBufferRange: an fp32
// Linear(8192, 8192) is 256 MiB, and lavapipe binds at most 128 MiB) is
// carried as an error, found without waiting by the parameters' Err and
// returned by NewSGD and NewAdam, naming the parameter and the limit.
func NewLinear(d *vk.Device, name string, in, out int, rng *rand.Rand) *Linear {
	checkSizes("NewLinear", name, fmt.Sprintf("in %d, out %d", in, out), in, out)
	if rng == nil {
		panic(&tensor.UsageError{Op: "NewLinear", Msg: fmt.Sprintf("layer %q: nil rng", name)})
	}
	bound := 1 / math.Sqrt(float64(in))
	return &Linear{
		W: newUniform(d, name+".weight", bound, rng, out, in),
		B: newUniform(d, name+".bias", bound, rng, out),
	}
}

// NewLinearNoBias returns a Linear without bias (torch.nn.Linear(in, out,
// bias=False)), its weight initialised as NewLinear's. Its Forward is
// x W^T and its Parameters the weight alone.
func NewLinearNoBias(d *vk.Device, name string, in, out int, rng *rand.Rand) *Linear {
	checkSizes("NewLinearNoBias", name, fmt.Sprintf("in %d, out %d", in, out), in, out)
	if rng == nil {
		panic(&tensor.UsageError{Op: "NewLinearNoBias", Msg: fmt.Sprintf("layer %q: nil rng", name)})
	}
	return &Linear{W: newUniform(d, name+".weight", 1/math.Sqrt(float64(in)), rng, out, in)}
}

// Forward applies the layer.
func (l *Linear) Forward(g *Graph, x *Var) *Var { return g.Linear(x, g.Param(l.W), optParam(g, l.B)) }

// Parameters returns the weight and the bias, if any.
func (l *Linear) Parameters() []*Param { return nonNil(l.W, l.B) }

// optParam is g.Param(p), or nil for a nil p (a layer without bias).
func optParam(g *Graph, p *Param) *Var {
	if p == nil {
		return nil
	}
	return g.Param(p)
}

// nonNil returns ps without the nil ones (biases a layer does not have).
func nonNil(ps ...*Param) []*Param {
	out := ps[:0:0]
	for _, p := range ps {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// ReLU is the rectifier as a module.
type ReLU struct{}

// Forward applies ReLU.
func (ReLU) Forward(g *Graph, x *Var) *Var { return g.ReLU(x) }

// Parameters returns none.
func (ReLU) Parameters() []*Param { return nil }

// GELU is GELU as a module, as torch.nn.GELU: GELU{} is the exact form,
// GELU{Approximate: "tanh"} the tanh approximation.
type GELU struct {
	// Approximate is "none" (or "") for the exact form, "tanh" for the tanh
	// approximation; anything else panics in Forward.
	Approximate string
}

// Forward applies GELU.
func (m GELU) Forward(g *Graph, x *Var) *Var {
	switch m.Approximate {
	case "", "none":
		return g.GELU(x)
	case "tanh":
		return g.GELUTanh(x)
	}
	panic(&tensor.UsageError{Op: "GELU", Msg: fmt.Sprintf("approximate %q: want \"none\" or \"tanh\"", m.Approximate)})
}

// Parameters returns none.
func (GELU) Parameters() []*Param { return nil }

// Dropout zeroes inputs with probability P while training, with a new mask
// each Graph, drawn from the graph's Options.Seeds (see SeedSource).
type Dropout struct {
	P        float32
	Training bool
}

// Forward applies dropout when training, else returns x.
func (m *Dropout) Forward(g *Graph, x *Var) *Var {
	if !m.Training {
		return x
	}
	return g.Dropout(x, m.P)
}

// Parameters returns none.
func (m *Dropout) Parameters() []*Param { return nil }

// LayerNorm normalises over the last axis with a learned scale and shift
// (no shift when Beta is nil, see NewLayerNormNoBias).
type LayerNorm struct {
	Gamma, Beta *Param
	Eps         float32
}

// NewLayerNorm returns a LayerNorm over features, gamma 1 and beta 0.
// features below 1 panics with a *tensor.UsageError naming the layer.
func NewLayerNorm(d *vk.Device, name string, features int) *LayerNorm {
	checkSizes("NewLayerNorm", name, fmt.Sprintf("features %d", features), features)
	ones := make([]float32, features)
	for i := range ones {
		ones[i] = 1
	}
	return &LayerNorm{
		Gamma: NewParam(d, name+".weight", ones, features),
		Beta:  NewParam(d, name+".bias", make([]float32, features), features),
		Eps:   1e-5,
	}
}

// NewLayerNormNoBias returns a LayerNorm over features without beta (nil
// Beta), gamma 1, as PyTorch's LayerNorm(bias=False).
func NewLayerNormNoBias(d *vk.Device, name string, features int) *LayerNorm {
	checkSizes("NewLayerNormNoBias", name, fmt.Sprintf("features %d", features), features)
	ones := make([]float32, features)
	for i := range ones {
		ones[i] = 1
	}
	return &LayerNorm{Gamma: NewParam(d, name+".weight", ones, features), Eps: 1e-5}
}

// Forward applies the normalisation; without Beta, no shift.
func (m *LayerNorm) Forward(g *Graph, x *Var) *Var {
	if m.Beta == nil {
		return g.LayerNorm(x, g.Param(m.Gamma), nil, m.Eps)
	}
	return g.LayerNorm(x, g.Param(m.Gamma), g.Param(m.Beta), m.Eps)
}

// Parameters returns gamma and beta, or gamma alone without Beta.
func (m *LayerNorm) Parameters() []*Param {
	if m.Beta == nil {
		return []*Param{m.Gamma}
	}
	return []*Param{m.Gamma, m.Beta}
}

// Sequential applies modules in order.
type Sequential []Module

// Forward applies every module in turn.
func (s Sequential) Forward(g *Graph, x *Var) *Var {
	for _, m := range s {
		x = m.Forward(g, x)
	}
	return x
}

// Parameters returns the parameters of every module, in order.
func (s Sequential) Parameters() []*Param {
	var ps []*Param
	for _, m := range s {
		ps = append(ps, m.Parameters()...)
	}
	return ps
}

// Close releases every parameter of m, a Module or any layer with
// parameters (a Block, whose Forward also takes the batch), and the
// buffers of a Module.
func Close(m interface{ Parameters() []*Param }) error {
	ps := m.Parameters()
	if mod, ok := m.(Module); ok {
		ps = State(mod)
	}
	for _, p := range ps {
		p.Close()
	}
	return nil
}
