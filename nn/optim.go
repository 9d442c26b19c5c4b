package nn

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/vkamp/vkamp/tensor"
)

// The optimizers update fp32 master weights on the device through
// tensor.OptimizerState: one dispatch per group of parameters that share
// memory blocks (usually one for the whole model). Each step reads a flag
// and skips itself on the device when it is set, so the gradient scaler
// never makes a step wait for the host; the step counter then does not
// advance.
//
// A parameter's Value or Grad replaced by another tensor (of the same
// shape) is followed: from the next step on, the optimizer updates the new
// tensors, keeping the moments and step count, and never writes the old
// ones' memory again. Param.Set, which copies new weights into the tensor
// the optimizer already updates, is the simpler way.

type optimizer struct {
	mu            sync.Mutex
	params        []*Param
	values, grads []*tensor.Tensor // per parameter: the tensors the state updates
	shapes        [][]int          // per parameter: the shape of its moments
	parts         []optPart        // the groups of parameters, in order (one unless grouped)
	grouped       bool             // made from ParamGroups: the parts' settings, not the options', decay
	keepsHalves   bool             // an Adam that keeps half weights: its steps refresh the copies
	lr            *deviceLR        // the learning rate the steps read on the device
	// used: per parameter, a step has run with it not frozen (or a
	// checkpoint held its moments). A checkpoint leaves out the moments of
	// the others, which no step has touched (checkpoint.go).
	used []bool
}

// optPart is one group of an optimizer's parameters, following the
// previous groups': its moments, step count and block tables, and its
// settings.
type optPart struct {
	n           int // parameters
	state       *tensor.OptimizerState
	weightDecay float64 // when grouped
	lrScale     float64 // the optimizer's LR times this; 1 unless grouped
}

// newOptimizer returns the state of an optimizer over params, in one group.
func newOptimizer(params []*Param, moments int) (*optimizer, error) {
	if len(params) == 0 {
		return nil, fmt.Errorf("nn: optimizer: no parameters")
	}
	return newParts(params, []optPart{{n: len(params), lrScale: 1}}, moments)
}

// newParts returns the state of an optimizer over params, split into parts
// (whose n add up to len(params)).
func newParts(params []*Param, parts []optPart, moments int) (*optimizer, error) {
	for _, p := range params {
		if p == nil || p.Value == nil || p.Grad == nil {
			continue // checkParams says so
		}
		if err := p.tensorErr(); err != nil { // one the device could not hold: say so now, not at the first step
			return nil, fmt.Errorf("nn: optimizer: parameter %s: %w", p.Name, err)
		}
	}
	if err := checkParams("optimizer", params, nil); err != nil {
		return nil, err
	}
	o := &optimizer{params: slices.Clone(params), parts: slices.Clone(parts), used: make([]bool, len(params))}
	for _, p := range params {
		o.values, o.grads, o.shapes = append(o.values, p.Value), append(o.grads, p.Grad), append(o.shapes, p.Value.Shape())
	}
	first := 0
	for i := range o.parts {
		pt := &o.parts[i]
		st, err := tensor.NewOptimizerState(slices.Clone(o.values[first:first+pt.n]), slices.Clone(o.grads[first:first+pt.n]), moments)
		if err != nil {
			o.close()
			return nil, fmt.Errorf("nn: optimizer: %w", err)
		}
		pt.state = st
		first += pt.n
	}
	return o, nil
}

// checkParams returns an error naming the first parameter of params that
// cannot be stepped with the others: nil, on another device, not float32,
// a gradient of another shape than its value, or one whose memory another
// parameter's update would also write (the same Param twice, or two that
// share a tensor). With shapes, each value must have its shape.
func checkParams(op string, params []*Param, shapes [][]int) error {
	for i, p := range params {
		if p == nil || p.Value == nil || p.Grad == nil {
			return fmt.Errorf("nn: %s: parameter %d is nil or has no value or gradient", op, i)
		}
	}
	d := params[0].Value.Device()
	seen := make(map[*Param]int, len(params))
	owner := make(map[*tensor.Tensor]string, 2*len(params))
	for i, p := range params {
		if j, ok := seen[p]; ok {
			return fmt.Errorf("nn: %s: parameter %s is listed twice (at %d and %d): it would be stepped twice", op, p.Name, j, i)
		}
		seen[p] = i
		if p.Value.Device() != d || p.Grad.Device() != d {
			return fmt.Errorf("nn: %s: parameter %s on another device", op, p.Name)
		}
		if p.Value.DType() != tensor.Float32 || p.Grad.DType() != tensor.Float32 {
			return fmt.Errorf("nn: %s: parameter %s: master weights and gradients must be float32", op, p.Name)
		}
		if shapes != nil && !slices.Equal(p.Value.Shape(), shapes[i]) {
			return fmt.Errorf("nn: %s: parameter %s: Value was replaced by a tensor of shape %v, but the optimizer's state is for %v: "+
				"copy new weights in with Param.Set", op, p.Name, p.Value.Shape(), shapes[i])
		}
		if !slices.Equal(p.Value.Shape(), p.Grad.Shape()) {
			return fmt.Errorf("nn: %s: parameter %s: value %v and gradient %v differ in shape", op, p.Name, p.Value.Shape(), p.Grad.Shape())
		}
		for _, c := range []struct {
			x    *tensor.Tensor
			what string
		}{{p.Value, p.Name + "'s value"}, {p.Grad, p.Name + "'s gradient"}} {
			if prev, ok := owner[c.x]; ok {
				return fmt.Errorf("nn: %s: %s is also %s: a step would update it twice", op, c.what, prev)
			}
			owner[c.x] = c.what
		}
	}
	return nil
}

// follow makes the state update the tensors the parameters hold now, if a
// Value or Grad was replaced since the last step.
func (o *optimizer) follow(op string) error {
	replaced := false
	for i, p := range o.params {
		replaced = replaced || p.Value != o.values[i] || p.Grad != o.grads[i]
	}
	if !replaced {
		return nil
	}
	if err := checkParams(op, o.params, o.shapes); err != nil {
		return err
	}
	first := 0
	for _, pt := range o.parts {
		for j := range pt.n {
			i := first + j
			if p := o.params[i]; p.Value != o.values[i] || p.Grad != o.grads[i] {
				pt.state.SetParam(j, p.Value, p.Grad)
				o.values[i], o.grads[i] = p.Value, p.Grad
			}
		}
		first += pt.n
	}
	return nil
}

// Gradients returns the parameters' gradients, for the gradient scaler:
// nil for a frozen parameter, which the scaler skips.
func (o *optimizer) Gradients() []*tensor.Tensor {
	gs := make([]*tensor.Tensor, len(o.params))
	for i, p := range o.params {
		if !p.Frozen {
			gs[i] = p.Grad
		}
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
// Every group of an optimizer has its own count; they skip together, so
// they agree.
func (o *optimizer) Steps() (int, error) { return o.parts[0].state.Steps() }

func (o *optimizer) setSteps(n int) error {
	for _, pt := range o.parts {
		if err := pt.state.SetSteps(n); err != nil {
			return err
		}
	}
	return nil
}

// moments returns moment m of every parameter, nil where unused.
func (o *optimizer) moments(m int) []*tensor.Tensor {
	var ms []*tensor.Tensor
	for _, pt := range o.parts {
		if pm := pt.state.Moments(m); pm != nil {
			ms = append(ms, pm...)
		}
	}
	return ms
}

// decay returns the weight decay of part pt, the options' base unless the
// optimizer is grouped.
func (o *optimizer) decay(pt optPart, base float64) float64 {
	if o.grouped {
		return pt.weightDecay
	}
	return base
}

// check follows replaced parameter tensors and returns the error of found
// or of a value or gradient, naming the parameter, before a step. found nil
// is a step that is never skipped.
func (o *optimizer) check(op string, found *tensor.Tensor) error {
	if err := o.follow(op); err != nil {
		return err
	}
	o.syncFrozen()
	if !o.keepsHalves {
		for _, p := range o.params {
			p.staleHalf() // the step writes the values, not their copies
		}
	}
	if found != nil {
		if found.Len() != 1 || found.DType() != tensor.Float32 {
			panic(&tensor.ShapeError{Op: op, A: found.Shape(), B: []int{1}, Msg: "found must be one float32"})
		}
		if err := found.Err(); err != nil {
			return err
		}
	}
	for _, p := range o.params {
		if err := p.Value.Err(); err != nil {
			return fmt.Errorf("nn: %s: value of %s: %w", op, p.Name, err)
		}
		if err := p.Grad.Err(); err != nil {
			return fmt.Errorf("nn: %s: gradient of %s: %w", op, p.Name, err)
		}
	}
	return nil
}

func (o *optimizer) close() {
	if o == nil {
		return // the zero SGD or Adam
	}
	for _, pt := range o.parts {
		pt.state.Close()
	}
	if o.lr != nil {
		o.lr.close()
	}
}

func checkHyper(name string, v, lo, hi float64, loOpen, hiOpen bool) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi || (loOpen && v == lo) || (hiOpen && v == hi) {
		return fmt.Errorf("nn: invalid %s %g", name, v)
	}
	return nil
}

// checkLR checks a learning rate: finite, not negative, and not 0 unless
// zeroOK. An LR of 0 trains nothing, and is what a zero options struct
// holds, so it is refused unless the caller says it is meant.
func checkLR(lr float64, zeroOK bool) error {
	if err := checkHyper("lr", lr, 0, math.MaxFloat32, false, false); err != nil {
		return err
	}
	if lr == 0 && !zeroOK {
		return fmt.Errorf("nn: LR is 0, which trains nothing: set LR, or ZeroLR if 0 is meant")
	}
	return nil
}

// SGDOptions configure SGD, as torch.optim.SGD. LR has no default: 0 is an
// error unless ZeroLR is set.
type SGDOptions struct {
	LR, Momentum, Dampening, WeightDecay float64
	Nesterov                             bool
	// ZeroLR allows an LR of 0 (steps that change nothing but the moments
	// and the step count), in the options and in SetLR; without it LR 0 is
	// an error, since a forgotten LR would otherwise train nothing, silently.
	// A schedule that reaches 0 needs it too.
	ZeroLR bool
	// Fused lets a gradient scaler leave the unscaling to the step, as
	// AdamOptions.Fused (PyTorch's SGD(fused=True)).
	Fused bool
}

// validate checks the options, as NewSGD and LoadCheckpoint need them.
func (o *SGDOptions) validate() error {
	if err := errs(checkLR(o.LR, o.ZeroLR),
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
	if err := opt.rateOnDevice(o.LR); err != nil {
		return nil, err
	}
	return &SGD{optimizer: opt, o: o}, nil
}

// Step updates the parameters from their gradients.
func (s *SGD) Step() error { return s.step(nil) }

// StepUnless updates the parameters unless found[0] is non-zero when the
// step runs on the device (the gradient scaler's overflow flag).
func (s *SGD) StepUnless(found *tensor.Tensor) error {
	if found == nil {
		panic(&tensor.UsageError{Op: "sgd", Msg: "nil found"})
	}
	return s.step(found)
}

// FusesUnscale reports whether a gradient scaler may leave the unscaling
// to StepUnscaling (SGDOptions.Fused).
func (s *SGD) FusesUnscale() bool { return s.o.Fused }

// StepUnscaling is SGD's step on gradients unscaled as they are read, as
// Adam's StepUnscaling.
func (s *SGD) StepUnscaling(found *tensor.Tensor, scale *tensor.LossScale) error {
	if found == nil || scale == nil {
		panic(&tensor.UsageError{Op: "sgd", Msg: "nil found or scale"})
	}
	return s.stepScaled(found, scale)
}

func (s *SGD) step(found *tensor.Tensor) error { return s.stepScaled(found, nil) }

// stepScaled records the step, skipped on found (nil: never), unscaling
// the gradients by scale (nil: none).
func (s *SGD) stepScaled(found *tensor.Tensor, scale *tensor.LossScale) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("sgd", found); err != nil {
		return err
	}
	if err := s.lr.set(s.optimizer, s.o.LR); err != nil { // a checkpoint's rate, loaded since SetLR
		return err
	}
	for i, pt := range s.parts {
		c := tensor.SGDConfig{LR: float32(s.o.LR * pt.lrScale), Momentum: float32(s.o.Momentum), Dampening: float32(s.o.Dampening),
			WeightDecay: float32(s.decay(pt, s.o.WeightDecay)), Nesterov: s.o.Nesterov, LRTensor: s.lr.ts[i], Unscale: scale}
		if err := pt.state.SGDStep(c, found); err != nil {
			return err
		}
	}
	return nil
}

// LR returns the learning rate.
func (s *SGD) LR() float64 { s.mu.Lock(); defer s.mu.Unlock(); return s.o.LR }

// SetLR sets the learning rate for the following steps, as Adam's SetLR
// (on the device, so a captured step follows it). 0 is an error unless the
// options set ZeroLR.
func (s *SGD) SetLR(lr float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkLR(lr, s.o.ZeroLR); err != nil {
		return err
	}
	s.o.LR = lr
	return s.lr.set(s.optimizer, lr)
}

// Close releases the optimizer's state (not the parameters).
func (s *SGD) Close() error { s.close(); return nil }

// AdamOptions configure Adam and AdamW, as torch.optim.Adam(W). LR has no
// default: 0 is an error unless ZeroLR is set.
type AdamOptions struct {
	LR, Beta1, Beta2, Eps, WeightDecay float64
	// Decoupled makes it AdamW: weight decay applied to the weight, not
	// added to the gradient.
	Decoupled bool
	// ZeroLR allows an LR of 0, in the options and in SetLR, as
	// SGDOptions.ZeroLR.
	ZeroLR bool
	// Fused lets a gradient scaler leave the unscaling to the step, as
	// PyTorch's Adam(fused=True) takes the scaler's grad_scale: when
	// scaler.Step is not preceded by scaler.Unscale, the gradients are
	// only checked for inf and NaN, and the step multiplies each by the
	// inverse of the scale as it reads it. The update is the same, bit for
	// bit, with one pass over the gradients fewer; the gradients stay
	// scaled after the step (call scaler.Unscale first to read or clip
	// them unscaled).
	Fused bool
}

// validate checks the options, as NewAdam (after its defaults) and
// LoadCheckpoint need them.
func (o *AdamOptions) validate() error {
	return errs(checkLR(o.LR, o.ZeroLR),
		checkHyper("beta1", o.Beta1, 0, 1, false, true),
		checkHyper("beta2", o.Beta2, 0, 1, false, true),
		checkHyper("eps", o.Eps, 0, math.MaxFloat32, false, false),
		checkHyper("weight decay", o.WeightDecay, 0, math.MaxFloat32, false, false))
}

// Adam is Adam (or AdamW) with bias correction, with PyTorch's formulas.
type Adam struct {
	*optimizer
	o        AdamOptions
	keepHalf bool // KeepHalfWeights
}

// NewAdam returns an Adam optimizer over params. Zero Beta1, Beta2 and Eps
// take PyTorch's defaults 0.9, 0.999 and 1e-8.
func NewAdam(params []*Param, o AdamOptions) (*Adam, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	opt, err := newOptimizer(params, 2)
	if err != nil {
		return nil, err
	}
	return newAdam(opt, o)
}

// newAdam returns an Adam over opt's state, with its learning rate on the
// device.
func newAdam(opt *optimizer, o AdamOptions) (*Adam, error) {
	if err := opt.rateOnDevice(o.LR); err != nil {
		return nil, err
	}
	return &Adam{optimizer: opt, o: o}, nil
}

// defaults gives zero Beta1, Beta2 and Eps PyTorch's defaults, then
// validates the options.
func (o *AdamOptions) defaults() error {
	if o.Beta1 == 0 {
		o.Beta1 = 0.9
	}
	if o.Beta2 == 0 {
		o.Beta2 = 0.999
	}
	if o.Eps == 0 {
		o.Eps = 1e-8
	}
	return o.validate()
}

// Step updates the parameters from their gradients.
func (a *Adam) Step() error { return a.step(nil) }

// StepUnless updates the parameters unless found[0] is non-zero when the
// step runs on the device; a skipped step leaves the moments and the step
// count untouched.
func (a *Adam) StepUnless(found *tensor.Tensor) error {
	if found == nil {
		panic(&tensor.UsageError{Op: "adam", Msg: "nil found"})
	}
	return a.step(found)
}

// FusesUnscale reports whether a gradient scaler may leave the unscaling
// to StepUnscaling (AdamOptions.Fused).
func (a *Adam) FusesUnscale() bool { return a.o.Fused }

// StepUnscaling updates the parameters from their gradients multiplied by
// the inverse of scale as the step reads them, unless found[0] is non-zero
// when the step runs; found must hold scale's check of these gradients
// (tensor.LossScale.Check). The gradients stay as they are. A
// scaler.Scaler calls it when the options set Fused.
func (a *Adam) StepUnscaling(found *tensor.Tensor, scale *tensor.LossScale) error {
	if found == nil || scale == nil {
		panic(&tensor.UsageError{Op: "adam", Msg: "nil found or scale"})
	}
	return a.stepScaled(found, scale)
}

func (a *Adam) step(found *tensor.Tensor) error { return a.stepScaled(found, nil) }

// stepScaled records the step, skipped on found (nil: never), unscaling
// the gradients by scale (nil: none).
func (a *Adam) stepScaled(found *tensor.Tensor, scale *tensor.LossScale) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.keepsHalves = a.keepHalf
	if err := a.check("adam", found); err != nil {
		return err
	}
	if a.keepHalf {
		if err := a.prepareHalves(); err != nil {
			return err
		}
	}
	if err := a.lr.set(a.optimizer, a.o.LR); err != nil { // a checkpoint's rate, loaded since SetLR
		return err
	}
	for i, pt := range a.parts {
		c := tensor.AdamConfig{LR: float32(a.o.LR * pt.lrScale), Beta1: float32(a.o.Beta1), Beta2: float32(a.o.Beta2), Eps: float32(a.o.Eps),
			WeightDecay: float32(a.decay(pt, a.o.WeightDecay)), Decoupled: a.o.Decoupled, LRTensor: a.lr.ts[i], Unscale: scale}
		if err := pt.state.AdamStep(c, found); err != nil {
			return err
		}
	}
	if a.keepHalf {
		a.markHalves()
	}
	return nil
}

// LR returns the learning rate.
func (a *Adam) LR() float64 { a.mu.Lock(); defer a.mu.Unlock(); return a.o.LR }

// SetLR sets the learning rate for the following steps. 0 is an error
// unless the options set ZeroLR. The rate is written to the device, where
// the steps read it: a step captured by a tensor.Replayer replays with the
// rate of the last SetLR before the replay. Calling it while a step is
// captured is an error wrapping vk.ErrCapturing.
func (a *Adam) SetLR(lr float64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := checkLR(lr, a.o.ZeroLR); err != nil {
		return err
	}
	a.o.LR = lr
	return a.lr.set(a.optimizer, lr)
}

// Close releases the optimizer's state (not the parameters).
func (a *Adam) Close() error { a.dropHalves(); a.close(); return nil }

func errs(es ...error) error {
	for _, e := range es {
		if e != nil {
			return e
		}
	}
	return nil
}
