package nn

import (
	"math"

	"github.com/vkamp/vkamp/tensor"
)

// AdadeltaOptions configure Adadelta, as torch.optim.Adadelta. Zero LR,
// Rho and Eps take PyTorch's defaults 1.0, 0.9 and 1e-6 (so an LR of 0 is
// not possible: Adadelta's default LR is not a forgotten one).
type AdadeltaOptions struct {
	LR, Rho, Eps, WeightDecay float64
}

// validate checks the options, as NewAdadelta (after its defaults) and
// LoadCheckpoint need them.
func (o *AdadeltaOptions) validate() error {
	return errs(checkLR(o.LR, false),
		checkHyper("rho", o.Rho, 0, 1, false, false),
		checkHyper("eps", o.Eps, 0, math.MaxFloat32, false, false),
		checkHyper("weight decay", o.WeightDecay, 0, math.MaxFloat32, false, false))
}

// Adadelta is Adadelta with PyTorch's formulas: per element, the running
// averages of squared gradients (moment 0, checkpointed as ".m1") and of
// squared updates (moment 1, ".m2"), and the update sqrt(u + eps) /
// sqrt(v + eps) * g scaled by LR. Like SGD and Adam it steps on the device
// and skips itself there through StepUnless.
type Adadelta struct {
	*optimizer
	o AdadeltaOptions
}

// NewAdadelta returns an Adadelta optimizer over params.
func NewAdadelta(params []*Param, o AdadeltaOptions) (*Adadelta, error) {
	if o.LR == 0 {
		o.LR = 1
	}
	if o.Rho == 0 {
		o.Rho = 0.9
	}
	if o.Eps == 0 {
		o.Eps = 1e-6
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	opt, err := newOptimizer(params, 2)
	if err != nil {
		return nil, err
	}
	if err := opt.rateOnDevice(o.LR); err != nil {
		return nil, err
	}
	return &Adadelta{optimizer: opt, o: o}, nil
}

// Step updates the parameters from their gradients.
func (a *Adadelta) Step() error { return a.step(nil) }

// StepUnless updates the parameters unless found[0] is non-zero when the
// step runs on the device; a skipped step leaves the averages and the step
// count untouched.
func (a *Adadelta) StepUnless(found *tensor.Tensor) error {
	if found == nil {
		panic(&tensor.UsageError{Op: "adadelta", Msg: "nil found"})
	}
	return a.step(found)
}

func (a *Adadelta) step(found *tensor.Tensor) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.check("adadelta", found); err != nil {
		return err
	}
	if err := a.lr.set(a.optimizer, a.o.LR); err != nil { // a checkpoint's rate, loaded since SetLR
		return err
	}
	for i, pt := range a.parts {
		c := tensor.AdadeltaConfig{LR: float32(a.o.LR * pt.lrScale), Rho: float32(a.o.Rho), Eps: float32(a.o.Eps),
			WeightDecay: float32(a.decay(pt, a.o.WeightDecay)), LRTensor: a.lr.ts[i]}
		if err := pt.state.AdadeltaStep(c, found); err != nil {
			return err
		}
	}
	return nil
}

// LR returns the learning rate.
func (a *Adadelta) LR() float64 { a.mu.Lock(); defer a.mu.Unlock(); return a.o.LR }

// SetLR sets the learning rate for the following steps (a schedule such
// as examples/mnist's StepLR(gamma=0.7) calls it once per epoch), on the
// device as Adam's SetLR, so a captured step follows it. It must be
// positive and finite.
func (a *Adadelta) SetLR(lr float64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := checkLR(lr, false); err != nil {
		return err
	}
	a.o.LR = lr
	return a.lr.set(a.optimizer, lr)
}

// Close releases the optimizer's state (not the parameters).
func (a *Adadelta) Close() error { a.close(); return nil }

func (a *Adadelta) hyper() any   { return &a.o }
func (a *Adadelta) kind() string { return "adadelta" }
