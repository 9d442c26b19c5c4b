package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// Recurrent layers as PyTorch's torch.nn.RNN, LSTM and GRU: the same
// equations, gate order, weight shapes and names (weight_ih_l0,
// weight_hh_l0, bias_ih_l0, bias_hh_l0, ...), initialisation and
// arguments, so a PyTorch state dict loads into them. They are composed
// from graph ops, so autograd trains them through time and autocast runs
// their products in fp16 or bf16 as it runs PyTorch's cells (lstm_cell,
// gru_cell and rnn_*_cell are on its lower-precision list); the input's
// product with weight_ih is one matmul over every step, as cuDNN does.

// RNNOptions are the arguments of RNN, LSTM and GRU.
type RNNOptions struct {
	Input, Hidden int // input_size, hidden_size
	Layers        int // num_layers [1]
	// NoBias drops the biases (bias=False).
	NoBias bool
	// BatchFirst takes and gives [batch, seq, feature] in place of [seq,
	// batch, feature] (batch_first=True).
	BatchFirst bool
	// Dropout is applied to the outputs of every layer but the last while
	// the module's Training is set (dropout).
	Dropout float32
	// ReLU uses relu in place of tanh in RNN (nonlinearity='relu').
	ReLU bool
}

// rnnKind is which recurrence a Recurrent runs.
type rnnKind int

const (
	kindRNN rnnKind = iota
	kindLSTM
	kindGRU
)

var rnnNames = [...]string{kindRNN: "RNN", kindLSTM: "LSTM", kindGRU: "GRU"}

// gates is the number of gate blocks in the weights' rows.
func (k rnnKind) gates() int { return [...]int{kindRNN: 1, kindLSTM: 4, kindGRU: 3}[k] }

// RNNLayer holds one layer's parameters: WeightIH [gates*Hidden, in],
// WeightHH [gates*Hidden, Hidden] and their biases (nil with NoBias).
type RNNLayer struct {
	WeightIH, WeightHH, BiasIH, BiasHH *Param
}

// Recurrent is an RNN, LSTM or GRU (NewRNN, NewLSTM, NewGRU).
type Recurrent struct {
	Layers   []RNNLayer
	Opts     RNNOptions
	Training bool // dropout between layers on
	kind     rnnKind
}

// NewRNN returns an Elman RNN, h' = tanh(x W_ih^T + b_ih + h W_hh^T +
// b_hh) (relu with Opts.ReLU), as torch.nn.RNN.
func NewRNN(d *vk.Device, name string, o RNNOptions, rng *rand.Rand) *Recurrent {
	return newRecurrent(d, name, kindRNN, o, rng)
}

// NewLSTM returns an LSTM as torch.nn.LSTM: gates i, f, g, o in that order
// in the weights' rows; c' = f*c + i*g, h' = o*tanh(c').
func NewLSTM(d *vk.Device, name string, o RNNOptions, rng *rand.Rand) *Recurrent {
	return newRecurrent(d, name, kindLSTM, o, rng)
}

// NewGRU returns a GRU as torch.nn.GRU: gates r, z, n in that order; n =
// tanh(x W_in^T + b_in + r*(h W_hn^T + b_hn)), h' = (1-z)*n + z*h.
func NewGRU(d *vk.Device, name string, o RNNOptions, rng *rand.Rand) *Recurrent {
	return newRecurrent(d, name, kindGRU, o, rng)
}

// newRecurrent checks the options and draws every weight and bias from
// uniform(-1/sqrt(Hidden), 1/sqrt(Hidden)) as PyTorch does, in its order:
// per layer weight_ih, weight_hh, bias_ih, bias_hh.
func newRecurrent(d *vk.Device, name string, kind rnnKind, o RNNOptions, rng *rand.Rand) *Recurrent {
	op := "New" + rnnNames[kind]
	if o.Layers == 0 {
		o.Layers = 1
	}
	checkSizes(op, name, fmt.Sprintf("input %d, hidden %d, layers %d", o.Input, o.Hidden, o.Layers), o.Input, o.Hidden, o.Layers)
	if rng == nil {
		panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("layer %q: nil rng", name)})
	}
	if !(o.Dropout >= 0 && o.Dropout < 1) {
		panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("layer %q: dropout %g is not in [0, 1)", name, o.Dropout)})
	}
	if o.ReLU && kind != kindRNN {
		panic(&tensor.UsageError{Op: op, Msg: fmt.Sprintf("layer %q: the relu nonlinearity is RNN's only", name)})
	}
	r := &Recurrent{Opts: o, kind: kind}
	bound, rows := 1/math.Sqrt(float64(o.Hidden)), kind.gates()*o.Hidden
	for l := range o.Layers {
		in := o.Input
		if l > 0 {
			in = o.Hidden
		}
		p := func(what string, shape ...int) *Param {
			return newUniform(d, fmt.Sprintf("%s.%s_l%d", name, what, l), bound, rng, shape...)
		}
		ly := RNNLayer{WeightIH: p("weight_ih", rows, in), WeightHH: p("weight_hh", rows, o.Hidden)}
		if !o.NoBias {
			ly.BiasIH, ly.BiasHH = p("bias_ih", rows), p("bias_hh", rows)
		}
		r.Layers = append(r.Layers, ly)
	}
	return r
}

// Parameters returns every layer's weights and biases, in PyTorch's
// order.
func (r *Recurrent) Parameters() []*Param {
	var ps []*Param
	for _, l := range r.Layers {
		ps = append(ps, nonNil(l.WeightIH, l.WeightHH, l.BiasIH, l.BiasHH)...)
	}
	return ps
}

// SetTraining turns the dropout between layers on or off.
func (r *Recurrent) SetTraining(training bool) { r.Training = training }

// Forward runs the layer from zero states and returns its output alone,
// so that it composes in a Sequential (PyTorch's output, discarding h_n).
func (r *Recurrent) Forward(g *Graph, x *Var) *Var {
	out, _, _ := r.Run(g, x, nil, nil)
	return out
}

// Run runs the layer over x, [seq, batch, Input] ([batch, seq, Input] with
// BatchFirst), from the initial states h0 and, for an LSTM, c0, each
// [Layers, batch, Hidden] (nil: zeros). It returns the last layer's output
// at every step, [seq, batch, Hidden] (batch first with BatchFirst), the
// final states h_n and, for an LSTM, c_n ([Layers, batch, Hidden]; nil
// for the others), as PyTorch's output, h_n and (h_n, c_n). Shapes that
// do not fit panic with a *tensor.ShapeError, a c0 for an RNN or GRU with
// a *tensor.UsageError.
func (r *Recurrent) Run(g *Graph, x, h0, c0 *Var) (out, hn, cn *Var) {
	op := rnnNames[r.kind]
	xs := x.Shape()
	if len(xs) != 3 || xs[2] != r.Opts.Input {
		panic(&tensor.ShapeError{Op: op, A: xs, B: []int{-1, -1, r.Opts.Input}, Msg: "want [seq, batch, input] (batch first with BatchFirst)"})
	}
	if r.Opts.BatchFirst {
		x = g.Permute(x, 1, 0, 2)
	}
	steps, batch := x.Shape()[0], x.Shape()[1]
	state := []int{len(r.Layers), batch, r.Opts.Hidden}
	for _, s := range []*Var{h0, c0} {
		if s != nil && !slices.Equal(s.Shape(), state) {
			panic(&tensor.ShapeError{Op: op, A: s.Shape(), B: state, Msg: "initial states are [layers, batch, hidden]"})
		}
	}
	if c0 != nil && r.kind != kindLSTM {
		panic(&tensor.UsageError{Op: op, Msg: "only an LSTM has a cell state c0"})
	}
	// The states in the products' dtype: under autocast the cells run in
	// fp16 or bf16, states included, as PyTorch's autocast casts lstm_cell's
	// (and cuDNN's) hx and cx.
	dt := g.dtypeFor(tensor.OpLinear, x)
	var hs, cs []*Var
	for l, ly := range r.Layers {
		h, c := r.initial(g, h0, l, batch, dt), (*Var)(nil)
		if r.kind == kindLSTM {
			c = r.initial(g, c0, l, batch, dt)
		}
		if l > 0 && r.Training && r.Opts.Dropout > 0 {
			x = g.Dropout(x, r.Opts.Dropout)
		}
		// Every step's input product at once: [seq*batch, gates*hidden].
		in := x.Shape()[2]
		xw := g.Linear(g.Reshape(x, steps*batch, in), g.Param(ly.WeightIH), optParam(g, ly.BiasIH))
		whh, bhh := g.Param(ly.WeightHH), optParam(g, ly.BiasHH)
		outs := make([]*Var, steps)
		for t := range steps {
			xt := g.Narrow(xw, 0, t*batch, batch)
			h, c = r.step(g, xt, h, c, whh, bhh)
			outs[t] = h
		}
		x = g.Stack(0, outs...)
		hs, cs = append(hs, h), append(cs, c)
	}
	out = x
	if r.Opts.BatchFirst {
		out = g.Permute(out, 1, 0, 2)
	}
	hn = g.Stack(0, hs...)
	if r.kind == kindLSTM {
		cn = g.Stack(0, cs...)
	}
	return out, hn, cn
}

// initial is layer l's initial state from s ([layers, batch, hidden]), or
// zeros in dtype dt for a nil s.
func (r *Recurrent) initial(g *Graph, s *Var, l, batch int, dt tensor.DType) *Var {
	if s == nil {
		return g.Input(g.keep(tensor.Zeros(g.dev, dt, batch, r.Opts.Hidden)))
	}
	return g.Cast(g.Reshape(g.Narrow(s, 0, l, 1), batch, r.Opts.Hidden), dt)
}

// step is one time step of one layer: xt is the input's product with
// weight_ih plus bias_ih, [batch, gates*hidden].
func (r *Recurrent) step(g *Graph, xt, h, c, whh, bhh *Var) (*Var, *Var) {
	hw := g.Linear(h, whh, bhh)
	n := r.Opts.Hidden
	gate := func(v *Var, i int) *Var { return g.Narrow(v, 1, i*n, n) }
	switch r.kind {
	case kindLSTM:
		pre := g.Add(xt, hw)
		i, f := g.Sigmoid(gate(pre, 0)), g.Sigmoid(gate(pre, 1))
		gg, o := g.Tanh(gate(pre, 2)), g.Sigmoid(gate(pre, 3))
		c = g.Add(g.Mul(f, c), g.Mul(i, gg))
		return g.Mul(o, g.Tanh(c)), c
	case kindGRU:
		rz := g.Sigmoid(g.Add(g.Narrow(xt, 1, 0, 2*n), g.Narrow(hw, 1, 0, 2*n)))
		rg, z := gate(rz, 0), gate(rz, 1)
		nn := g.Tanh(g.Add(gate(xt, 2), g.Mul(rg, gate(hw, 2))))
		return g.Add(nn, g.Mul(z, g.Sub(h, nn))), nil // (1-z)*n + z*h
	default:
		pre := g.Add(xt, hw)
		if r.Opts.ReLU {
			return g.ReLU(pre), nil
		}
		return g.Tanh(pre), nil
	}
}
