package nn

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/vkamp/vkamp/tensor"
	"github.com/vkamp/vkamp/vk"
)

// The optimizers update fp32 master weights on the device, one dispatch per
// group of parameters that share memory blocks (usually one for the whole
// model): the parameters, gradients and state buffers are reached through
// bindings of their blocks and a table of chunks. Each step reads a flag and
// skips itself on the device when it is set, so the gradient scaler never
// makes a step wait for the host; the step counter then does not advance.

const optChunk = 8192 // elements per workgroup

type optimizer struct {
	mu     sync.Mutex
	dev    *vk.Device
	params []*Param
	states [2][]*tensor.Tensor // per parameter: first and second moment (nil if unused)
	steps  *vk.Buffer          // uint32 count of steps taken
	zero   *tensor.Tensor      // an always-zero flag, for plain steps
	groups []optGroup
}

type optGroup struct {
	bufs   [4]*vk.Buffer // param, grad, m1, m2 blocks
	table  *vk.Buffer
	chunks int
}

func newOptimizer(params []*Param, moments int) (*optimizer, error) {
	if len(params) == 0 {
		return nil, fmt.Errorf("nn: optimizer: no parameters")
	}
	d := params[0].Value.Device()
	o := &optimizer{dev: d, params: params}
	for _, p := range params {
		if p.Value.Device() != d {
			o.close() // the states of the parameters before it
			return nil, fmt.Errorf("nn: optimizer: parameter %s on another device", p.Name)
		}
		if p.Value.DType() != tensor.Float32 || p.Grad.DType() != tensor.Float32 {
			o.close()
			return nil, fmt.Errorf("nn: optimizer: parameter %s: master weights and gradients must be float32", p.Name)
		}
		for m := 0; m < 2; m++ {
			var s *tensor.Tensor
			if m < moments {
				s = tensor.Zeros(d, tensor.Float32, p.Value.Shape()...)
			}
			o.states[m] = append(o.states[m], s)
		}
	}
	var err error
	if o.steps, err = d.Alloc(4); err == nil {
		err = d.Fill(o.steps, 0, 4, 0)
	}
	if err != nil {
		o.close()
		return nil, fmt.Errorf("nn: optimizer: %w", err)
	}
	o.zero = tensor.Zeros(d, tensor.Float32, 1)
	if err := o.zero.Err(); err != nil {
		o.close()
		return nil, fmt.Errorf("nn: optimizer: %w", err)
	}
	return o, nil
}

// Gradients returns the parameters' gradients, for the gradient scaler.
func (o *optimizer) Gradients() []*tensor.Tensor {
	gs := make([]*tensor.Tensor, len(o.params))
	for i, p := range o.params {
		gs[i] = p.Grad
	}
	return gs
}

// ZeroGrad zeroes every parameter's gradient.
func (o *optimizer) ZeroGrad() error {
	for _, p := range o.params {
		if err := p.ZeroGrad(); err != nil {
			return err
		}
	}
	return nil
}

// Steps returns the number of steps taken (skipped ones not counted),
// waiting for the device.
func (o *optimizer) Steps() (int, error) {
	var b [4]byte
	if err := o.steps.Read(0, b[:]); err != nil {
		return 0, err
	}
	return int(binary.LittleEndian.Uint32(b[:])), nil
}

func (o *optimizer) setSteps(n int) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(n))
	return o.steps.Write(0, b[:])
}

// buildGroups groups the parameters by the blocks of their tensors and
// uploads a chunk table per group. The tensors never move, so it runs once.
func (o *optimizer) buildGroups() error {
	if o.groups != nil {
		return nil
	}
	limit := int64(o.dev.Info().MaxStorageBufferRange)
	tables := map[[4]*vk.Buffer][]byte{}
	var order [][4]*vk.Buffer
	for i, p := range o.params {
		ts := [4]*tensor.Tensor{p.Value, p.Grad, o.states[0][i], o.states[1][i]}
		var key [4]*vk.Buffer
		var offs [4]int64
		for j, t := range ts {
			if t == nil {
				key[j], offs[j] = key[0], 0 // unused by the kernel: any binding will do
				continue
			}
			blk, off, err := t.Buffer().Block()
			if err != nil {
				return err
			}
			if blk.Size() > limit {
				blk, off = t.Buffer(), 0
			}
			key[j], offs[j] = blk, off
		}
		if _, ok := tables[key]; !ok {
			order = append(order, key)
		}
		raw := tables[key]
		n := p.Value.Len()
		for done := 0; done < n; done += optChunk {
			for _, off := range offs {
				raw = binary.LittleEndian.AppendUint32(raw, uint32(off/4+int64(done)))
			}
			raw = binary.LittleEndian.AppendUint32(raw, uint32(min(optChunk, n-done)))
			raw = append(raw, make([]byte, 12)...)
		}
		tables[key] = raw
	}
	for _, key := range order {
		raw := tables[key]
		tb, err := o.dev.Alloc(int64(len(raw)))
		if err == nil {
			err = tb.Write(0, raw)
		}
		if err != nil {
			o.freeGroups()
			return fmt.Errorf("nn: optimizer table: %w", err)
		}
		o.groups = append(o.groups, optGroup{bufs: key, table: tb, chunks: len(raw) / 32})
	}
	return nil
}

func (o *optimizer) freeGroups() {
	for _, g := range o.groups {
		g.table.Free()
	}
	o.groups = nil
}

// step records the update kernel over every group, then the step count.
func (o *optimizer) step(op string, push []uint32, moments int, found *tensor.Tensor) error {
	if found.Len() != 1 || found.DType() != tensor.Float32 {
		panic(&tensor.ShapeError{Op: op, A: found.Shape(), B: []int{1}, Msg: "found must be one float32"})
	}
	if err := found.Err(); err != nil {
		return err
	}
	for _, p := range o.params {
		if err := p.Grad.Err(); err != nil {
			return fmt.Errorf("nn: %s: gradient of %s: %w", op, p.Name, err)
		}
	}
	if err := o.buildGroups(); err != nil {
		return err
	}
	for _, g := range o.groups {
		bufs := []*vk.Buffer{g.bufs[0], g.bufs[1], g.bufs[2], g.table, found.Buffer(), o.steps}
		if moments == 2 {
			bufs = append(bufs, g.bufs[3])
		}
		groups := [3]uint32{uint32(min(g.chunks, 65535)), uint32((g.chunks + 65534) / 65535), 1}
		if err := dispatchBuffers(o.dev, op, nil, groups, append([]uint32{uint32(g.chunks)}, push...), bufs...); err != nil {
			return err
		}
	}
	return dispatchBuffers(o.dev, "step_count", nil, [3]uint32{1, 1, 1}, nil, found.Buffer(), o.steps)
}

func (o *optimizer) close() {
	if o == nil {
		return // the zero SGD or Adam
	}
	o.freeGroups()
	for _, st := range o.states {
		for _, s := range st {
			s.Release()
		}
	}
	if o.steps != nil {
		o.steps.Free()
	}
	o.zero.Release()
}

func f32(x float64) uint32 { return math.Float32bits(float32(x)) }

func checkHyper(name string, v, lo, hi float64, loOpen, hiOpen bool) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi || (loOpen && v == lo) || (hiOpen && v == hi) {
		return fmt.Errorf("nn: invalid %s %g", name, v)
	}
	return nil
}

// SGDOptions configure SGD, as torch.optim.SGD.
type SGDOptions struct {
	LR, Momentum, Dampening, WeightDecay float64
	Nesterov                             bool
}

// validate checks the options, as NewSGD and LoadCheckpoint need them.
func (o *SGDOptions) validate() error {
	if err := errs(checkHyper("lr", o.LR, 0, math.MaxFloat32, false, false),
		checkHyper("momentum", o.Momentum, 0, 1, false, false),
		checkHyper("dampening", o.Dampening, 0, 1, false, false),
		checkHyper("weight decay", o.WeightDecay, 0, math.MaxFloat32, false, false)); err != nil {
		return err
	}
	if o.Nesterov && (o.Momentum == 0 || o.Dampening != 0) {
		return fmt.Errorf("nn: Nesterov momentum needs a momentum and zero dampening")
	}
	return nil
}

// SGD is stochastic gradient descent with optional momentum (and Nesterov)
// and weight decay, with PyTorch's formulas.
type SGD struct {
	*optimizer
	o SGDOptions
}

// NewSGD returns an SGD optimizer over params.
func NewSGD(params []*Param, o SGDOptions) (*SGD, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	moments := 0
	if o.Momentum != 0 {
		moments = 1
	}
	opt, err := newOptimizer(params, moments)
	if err != nil {
		return nil, err
	}
	return &SGD{optimizer: opt, o: o}, nil
}

// Step updates the parameters from their gradients.
func (s *SGD) Step() error { return s.StepUnless(s.zero) }

// StepUnless updates the parameters unless found[0] is non-zero when the
// step runs on the device (the gradient scaler's overflow flag).
func (s *SGD) StepUnless(found *tensor.Tensor) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	nesterov := uint32(0)
	if s.o.Nesterov {
		nesterov = 1
	}
	return s.step("sgd", []uint32{f32(s.o.LR), f32(s.o.Momentum), f32(s.o.Dampening), f32(s.o.WeightDecay), nesterov}, 1, found)
}

// LR returns the learning rate.
func (s *SGD) LR() float64 { s.mu.Lock(); defer s.mu.Unlock(); return s.o.LR }

// SetLR sets the learning rate for the following steps.
func (s *SGD) SetLR(lr float64) error {
	if err := checkHyper("lr", lr, 0, math.MaxFloat32, false, false); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.LR = lr
	return nil
}

// Close releases the optimizer's state (not the parameters).
func (s *SGD) Close() error { s.close(); return nil }

// AdamOptions configure Adam and AdamW, as torch.optim.Adam(W).
type AdamOptions struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	// Decoupled makes it AdamW: weight decay applied to the weight, not
	// added to the gradient.
	Decoupled bool
}

// validate checks the options, as NewAdam (after its defaults) and
// LoadCheckpoint need them.
func (o *AdamOptions) validate() error {
	return errs(checkHyper("lr", o.LR, 0, math.MaxFloat32, false, false),
		checkHyper("beta1", o.Beta1, 0, 1, false, true),
		checkHyper("beta2", o.Beta2, 0, 1, false, true),
		checkHyper("eps", o.Eps, 0, math.MaxFloat32, false, false),
		checkHyper("weight decay", o.WeightDecay, 0, math.MaxFloat32, false, false))
}

// Adam is Adam (or AdamW) with bias correction, with PyTorch's formulas.
type Adam struct {
	*optimizer
	o AdamOptions
}

// NewAdam returns an Adam optimizer over params. Zero Beta1, Beta2 and Eps
// take PyTorch's defaults 0.9, 0.999 and 1e-8.
func NewAdam(params []*Param, o AdamOptions) (*Adam, error) {
	if o.Beta1 == 0 {
		o.Beta1 = 0.9
	}
	if o.Beta2 == 0 {
		o.Beta2 = 0.999
	}
	if o.Eps == 0 {
		o.Eps = 1e-8
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	opt, err := newOptimizer(params, 2)
	if err != nil {
		return nil, err
	}
	return &Adam{optimizer: opt, o: o}, nil
}

// Step updates the parameters from their gradients.
func (a *Adam) Step() error { return a.StepUnless(a.zero) }

// StepUnless updates the parameters unless found[0] is non-zero when the
// step runs on the device; a skipped step leaves the moments and the step
// count untouched.
func (a *Adam) StepUnless(found *tensor.Tensor) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	decoupled := uint32(0)
	if a.o.Decoupled {
		decoupled = 1
	}
	return a.step("adam", []uint32{f32(a.o.LR), f32(a.o.Beta1), f32(a.o.Beta2), f32(a.o.Eps), f32(a.o.WeightDecay), decoupled}, 2, found)
}

// LR returns the learning rate.
func (a *Adam) LR() float64 { a.mu.Lock(); defer a.mu.Unlock(); return a.o.LR }

// SetLR sets the learning rate for the following steps.
func (a *Adam) SetLR(lr float64) error {
	if err := checkHyper("lr", lr, 0, math.MaxFloat32, false, false); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.o.LR = lr
	return nil
}

// Close releases the optimizer's state (not the parameters).
func (a *Adam) Close() error { a.close(); return nil }

func errs(es ...error) error {
	for _, e := range es {
		if e != nil {
			return e
		}
	}
	return nil
}
