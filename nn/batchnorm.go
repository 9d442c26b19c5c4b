package nn

import (
	"fmt"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// BatchNorm normalises x [N, C, ...] per channel and applies gamma and beta
// ([C] each), in fp32 (the autocast policy's dtype), as
// torch.nn.functional.batch_norm: with o.Training, with the batch's mean
// and biased variance, updating o.Running (if set) on the device; else with
// o.Running's statistics. The running statistics are updated whether or
// not the graph records gradients, as PyTorch's are in training mode.
func (g *Graph) BatchNorm(x, gamma, beta *Var, o tensor.BatchNormOpts) *Var {
	defer g.use("BatchNorm").done()
	dt := g.fp32Only(tensor.OpBatchNorm, x, gamma, beta)
	x, gamma, beta = g.cast(x, dt), g.cast(gamma, dt), g.cast(beta, dt)
	y, stats := tensor.BatchNorm(x.t, gamma.t, beta.t, o)
	g.keep(stats)
	training := 0
	if o.Training {
		training = 1
	}
	return g.record(tensor.OpBatchNorm, y, attrs{n: training}, []*tensor.Tensor{stats}, x, gamma, beta)
}

func batchNormBack(g *Graph, n *node, dy *tensor.Tensor) []*tensor.Tensor {
	dx, dgamma, dbeta := tensor.BatchNormBackward(dy, n.inputs[0].t, n.inputs[1].t, n.saved[0], n.attr.n != 0)
	return []*tensor.Tensor{dx, dgamma, dbeta}
}

// A buffer is a Param without a gradient: state a module keeps and a
// checkpoint saves and loads, but that no optimizer steps (they refuse a
// Param without a gradient). BatchNorm2d's running statistics are buffers.
// State(m) lists a model's parameters and buffers, for SaveCheckpoint and
// LoadCheckpoint; Parameters(m) stays the list for optimizers.

// BufferHolder is a module with buffers.
type BufferHolder interface {
	Buffers() []*Param
}

// Buffers returns the buffers of m: those of every module nested in it (any
// Parent's children, a Sequential's included), in order, then m's own.
func Buffers(m Module) []*Param {
	var bs []*Param
	var subs []Module
	if p, ok := m.(Parent); ok {
		subs = p.Children()
	}
	for _, sub := range subs {
		bs = append(bs, Buffers(sub)...)
	}
	if h, ok := m.(BufferHolder); ok {
		bs = append(bs, h.Buffers()...)
	}
	return bs
}

// State returns m's parameters, then its buffers: what a checkpoint of the
// model holds, as PyTorch's state_dict.
func State(m Module) []*Param { return append(m.Parameters(), Buffers(m)...) }

// newBuffer returns a buffer of one tensor.
func newBuffer(name string, t *tensor.Tensor) *Param { return &Param{Name: name, Value: t} }

// BatchNorm2d is torch.nn.BatchNorm2d over x [N, C, H, W] (any x [N, C,
// ...] works): gamma (".weight") and beta (".bias") are parameters, the
// running mean and variance and the count of batches are buffers
// (".running_mean", ".running_var", ".num_batches_tracked", PyTorch's
// names, so a state_dict's tensors load by name; the count is int32 here,
// int64 in PyTorch).
//
// Training selects the mode, as PyTorch's module.train()/eval(): true
// (NewBatchNorm2d's default) normalises with each batch's statistics and
// updates the running ones on the device, false normalises with the running
// statistics. SetTraining flips it.
type BatchNorm2d struct {
	Gamma, Beta                                *Param
	RunningMean, RunningVar, NumBatchesTracked *Param // buffers
	Momentum, Eps                              float32
	Training                                   bool
}

// NewBatchNorm2d returns a BatchNorm2d over channels as PyTorch's: gamma 1,
// beta 0, running mean 0, running variance 1, momentum 0.1, eps 1e-5, in
// training mode. channels below 1 panics with a *tensor.UsageError naming
// the layer.
func NewBatchNorm2d(d *vk.Device, name string, channels int) *BatchNorm2d {
	checkSizes("NewBatchNorm2d", name, fmt.Sprintf("channels %d", channels), channels)
	return &BatchNorm2d{
		Gamma:             NewParam(d, name+".weight", ones(channels), channels),
		Beta:              NewParam(d, name+".bias", make([]float32, channels), channels),
		RunningMean:       newBuffer(name+".running_mean", tensor.Zeros(d, tensor.Float32, channels)),
		RunningVar:        newBuffer(name+".running_var", tensor.Full(d, tensor.Float32, 1, channels)),
		NumBatchesTracked: newBuffer(name+".num_batches_tracked", tensor.Zeros(d, tensor.Int32, 1)),
		Momentum:          0.1,
		Eps:               1e-5,
		Training:          true,
	}
}

func ones(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// Forward normalises x.
func (m *BatchNorm2d) Forward(g *Graph, x *Var) *Var {
	return g.BatchNorm(x, g.Param(m.Gamma), g.Param(m.Beta), tensor.BatchNormOpts{
		Training: m.Training, Momentum: m.Momentum, Eps: m.Eps,
		Running: &tensor.BatchNormRunning{Mean: m.RunningMean.Value, Var: m.RunningVar.Value, Count: m.NumBatchesTracked.Value}})
}

// SetTraining sets the mode: true for training, false for evaluation.
func (m *BatchNorm2d) SetTraining(on bool) { m.Training = on }

// Parameters returns gamma and beta.
func (m *BatchNorm2d) Parameters() []*Param { return []*Param{m.Gamma, m.Beta} }

// Buffers returns the running mean, the running variance and the count.
func (m *BatchNorm2d) Buffers() []*Param {
	return []*Param{m.RunningMean, m.RunningVar, m.NumBatchesTracked}
}
